// Response schemas for route definitions: the success bodies by `$ref`, and the Error body for each
// error status an operation can answer, with the headers OpenAPI should show.
import { ERROR_CODES, type ErrorCode } from './errors.js'

type Header = { type: 'string'; description: string }

/** A documented response header (a string; @fastify/swagger wraps it into a Header Object). */
export function header(description: string): Header {
  return { type: 'string', description }
}

const WHEN: Partial<Record<number, string>> = {
  400: 'The request has missing or invalid values (`invalid_request`, with `details`) or a body that is not JSON (`invalid_json`).',
  401: 'The API key is missing (`missing_api_key`) or not valid (`invalid_api_key`).',
  404: 'No animal with that identifier (`pet_not_found`).',
  408: 'The request did not arrive in time (`request_timeout`); the connection is closed.',
  409: 'A request with the same `Idempotency-Key` is still being processed (`idempotency_key_in_flight`); retry after `Retry-After` seconds.',
  413: 'The request body is larger than 16 KiB (`body_too_large`).',
  415: 'The request body is not `application/json` in UTF-8 (`unsupported_media_type`).',
  422: 'The `Idempotency-Key` was already used with a different request body (`idempotency_key_reused`).',
  429: 'Too many requests with this API key this minute (`rate_limited`); retry after `Retry-After` seconds.',
  431: 'The request headers exceed 16 KiB (`headers_too_large`); the connection is closed.',
  500: 'An unexpected error (`internal_error`); the body says nothing internal.',
  503: 'The database is unavailable (`service_unavailable`); retry later.',
}

const HEADERS: Partial<Record<number, Record<string, Header>>> = {
  409: { 'Retry-After': header('Seconds to wait before retrying with the same key.') },
  401: {
    'WWW-Authenticate': header(
      'RFC 6750 challenge: `Bearer realm="animal-store"`, plus `error="invalid_token"` for a wrong key.',
    ),
  },
}

/**
 * The Error responses for `statuses`, keyed by status, each `$ref: Error` (docs/specification.md,
 * Errors). Every status must have a code in ERROR_CODES.
 */
export function errorResponses(statuses: number[], extraHeaders: Record<string, Header> = {}): Record<number, object> {
  const responses: Record<number, object> = {}
  for (const status of statuses) {
    const codes = (Object.keys(ERROR_CODES) as ErrorCode[]).filter((code) => ERROR_CODES[code].status === status)
    if (codes.length === 0) throw new Error(`no error code has status ${status}`)
    const headers = { ...HEADERS[status], ...extraHeaders }
    responses[status] = {
      $ref: 'Error',
      description: WHEN[status] ?? codes.join(', '),
      ...(Object.keys(headers).length > 0 && { headers }),
    }
  }
  return responses
}
