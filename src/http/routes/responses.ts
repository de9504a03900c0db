// Response schemas for route definitions: the success bodies by `$ref`, and the Error body for each
// error status an operation can answer, with every header the service sends on each, as OpenAPI
// should show them (scripts/lib/contract.ts fails on a status or header the suite sees undescribed).
import { maxHeaderSize } from 'node:http'
import { BODY_LIMIT_BYTES } from '../../schemas.js'
import { ERROR_CODES, type ErrorCode } from '../errors.js'

type Header = { type: 'string'; description: string }

/** A documented response header (a string; @fastify/swagger wraps it into a Header Object). */
export function header(description: string): Header {
  return { type: 'string', description }
}

const WHEN: Partial<Record<number, string>> = {
  400: 'The request has missing or invalid values (`invalid_request`, with `details`) or a body that is not JSON (`invalid_json`).',
  401: 'The API key is missing (`missing_api_key`) or not valid (`invalid_api_key`).',
  403: 'The API key is valid but its scope does not allow this operation (`insufficient_scope`): a `read` key cannot create. Nothing was done.',
  404: 'No animal with that identifier (`pet_not_found`).',
  408: 'The request did not arrive in time (`request_timeout`); the connection is closed.',
  409: 'A request with the same `Idempotency-Key` is still being processed (`idempotency_key_in_flight`); retry after `Retry-After` seconds.',
  413: `The request body is larger than ${BODY_LIMIT_BYTES / 1024} KiB (\`body_too_large\`).`,
  415: 'The request body is not `application/json` in UTF-8 (`unsupported_media_type`).',
  422: 'The `Idempotency-Key` was already used with a different request body (`idempotency_key_reused`).',
  429: 'Too many requests with this API key this minute (`rate_limited`); retry after `Retry-After` seconds.',
  431: `The request headers exceed ${maxHeaderSize / 1024} KiB (\`headers_too_large\`); the connection is closed.`,
  500: 'An unexpected error (`internal_error`); the body says nothing internal.',
  503: 'The database is unavailable (`service_unavailable`); retry after `Retry-After` seconds.',
}

/** Sent on every response (src/http/pipeline/request-pipeline.ts, src/http/pipeline/api-headers.ts). */
const EVERY_RESPONSE: Record<string, Header> = {
  'X-Request-Id': header(
    "The request's id, also logged as `reqId`: the client's own `X-Request-Id` when it sent one of 1–128 visible ASCII characters, else a new UUID.",
  ),
  'Cache-Control': header('`no-store`: responses depend on the key and on changing data; no cache may keep them.'),
  'X-Content-Type-Options': header('`nosniff`.'),
}

/**
 * Sent on every response once the key is accepted (not on a 401, nor on a 408 or 431, answered
 * before the request was read), while the key's rate limit (its own, else RATE_LIMIT_PER_MINUTE) is not 0.
 */
const RATE_LIMIT: Record<string, Header> = {
  RateLimit: header(
    'draft-ietf-httpapi-ratelimit-headers: `default;r=REMAINING;t=SECONDS`, requests left for this key in the current window and the seconds until it resets.',
  ),
  'RateLimit-Policy': header(
    "draft-ietf-httpapi-ratelimit-headers: `default;q=QUOTA;w=60`, this key's quota per 60-second window: its own rate limit when it has one, else the service's.",
  ),
}

const HEADERS: Partial<Record<number, Record<string, Header>>> = {
  409: { 'Retry-After': header('Seconds to wait before retrying with the same key.') },
  401: {
    'WWW-Authenticate': header(
      'RFC 6750 challenge: `Bearer realm="animal-store"`, plus `error="invalid_token"` for a wrong key.',
    ),
  },
  403: {
    'WWW-Authenticate': header(
      'RFC 6750 §3.1 challenge: `Bearer realm="animal-store", error="insufficient_scope", scope="write"`, naming the scope the operation needs.',
    ),
  },
  429: { 'Retry-After': header('RFC 9110 §10.2.3: seconds until the window resets and requests are counted again.') },
  503: { 'Retry-After': header('RFC 9110 §10.2.3: seconds to wait before retrying.') },
}

/** Statuses answered before the key is accepted: without the RateLimit fields. */
const BEFORE_THE_KEY = new Set([401, 408, 431])

/** Every header of a response with `status`, given the operation's own `extra` (Link, Location, …). */
function headersFor(status: number, extra: Record<string, Header>): Record<string, Header> {
  return { ...EVERY_RESPONSE, ...(BEFORE_THE_KEY.has(status) ? {} : RATE_LIMIT), ...HEADERS[status], ...extra }
}

/**
 * A success response: the body by `$ref`, its `description`, and every header sent with it plus the
 * operation's own `headers` (Link, Location, …). Its examples are in src/http/routes/examples.ts.
 */
export function successResponse(status: number, ref: string, description: string, headers: Record<string, Header> = {}): object {
  return { $ref: ref, description, headers: headersFor(status, headers) }
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
    responses[status] = {
      $ref: 'Error',
      description: WHEN[status] ?? codes.join(', '),
      headers: headersFor(status, extraHeaders),
    }
  }
  return responses
}
