// Response schemas for route definitions: the success bodies by `$ref`, and the Error body for each
// error status an operation can answer, with every header the service sends on each, as OpenAPI
// should show them (scripts/lib/contract.ts fails on a status or header the suite sees undescribed).
import { Type } from '@sinclair/typebox'
import { URL_MAX_LENGTH } from '../../config-variables.js'
import { KEY_SCOPES, MAX_RATE_LIMIT_PER_MINUTE } from '../../key-grants.js'
import { BODY_LIMIT_BYTES } from '../../schemas.js'
import { ERROR_CODES, type ErrorCode } from '../errors.js'
import { maxHeaderSize } from '../node-http.js'
import { API_HEADERS } from '../pipeline/api-headers.js'
import { CHALLENGES, insufficientScopeChallenge } from '../pipeline/auth.js'
import { ETAG_MAX_LENGTH } from '../pipeline/conditional-requests.js'
import { RATE_LIMIT_POLICIES } from '../pipeline/rate-limit.js'
import { MAX_REQUEST_ID_LENGTH } from '../pipeline/request-id.js'

/** The bounds of a header's value in the document (OpenAPI Schema Object keywords). */
interface HeaderLimits {
  maxLength?: number
  pattern?: string
  enum?: string[]
}

/** A response header as a route schema declares it. */
export type Header = { type: 'string'; description: string } & HeaderLimits

/** A documented response header (a string; @fastify/swagger wraps it into a Header Object). */
export function header(description: string, limits: HeaderLimits = {}): Header {
  return { type: 'string', description, ...limits }
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

/** The longest link target the service writes: PUBLIC_URL (at most URL_MAX_LENGTH), else `/v1`. */
export const LINK_BASE_MAX_LENGTH = URL_MAX_LENGTH

/** Sent on every response (src/http/pipeline/request-pipeline.ts, src/http/pipeline/api-headers.ts). */
const EVERY_RESPONSE: Record<string, Header> = {
  'X-Request-Id': header(
    `The request's id, also logged as \`reqId\`: the client's own \`X-Request-Id\` when it sent one of 1–${MAX_REQUEST_ID_LENGTH} visible ASCII characters, else a new UUID.`,
    { maxLength: MAX_REQUEST_ID_LENGTH, pattern: '^[\\x21-\\x7E]+$' },
  ),
  'Cache-Control': header('`no-store`: responses depend on the key and on changing data; no cache may keep them.', {
    enum: [API_HEADERS['cache-control'] as string],
  }),
  'X-Content-Type-Options': header('`nosniff`.', { enum: [API_HEADERS['x-content-type-options'] as string] }),
}

/** Sent by @fastify/cors on every response but those written before the request is read (408, 431). */
const CORS: Record<string, Header> = {
  'Access-Control-Allow-Origin': header(
    "Only when `CORS_ORIGINS` is set and lists the request's `Origin`: that origin, so the page may read the response.",
    { maxLength: URL_MAX_LENGTH },
  ),
}

/** Statuses written on the socket before the request was read: no CORS, no RateLimit fields. */
const UNREAD = new Set([408, 431])

// Retry-After is whole seconds: 1 (409), SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS (503), the rest of a
// one-minute window (429): never more than 3 digits.
const RETRY_AFTER_LIMITS = { maxLength: 3, pattern: '^[0-9]+$' }

/**
 * Sent on every response once the key is accepted (policy `default`), while the key's rate limit (its
 * own, else RATE_LIMIT_PER_MINUTE) is not 0; and on a 401 and the 429 that replaces it (policy `auth`),
 * the client address's failed authentications, while AUTH_FAILURES_PER_MINUTE is not 0. Not on a 408
 * or 431, answered before the request was read.
 */
// A limit has at most as many digits as MAX_RATE_LIMIT_PER_MINUTE; a window is 60 s.
const LIMIT_DIGITS = String(MAX_RATE_LIMIT_PER_MINUTE).length
const POLICY = `(?:${RATE_LIMIT_POLICIES.join('|')})`
const POLICY_LENGTH = Math.max(...RATE_LIMIT_POLICIES.map((policy) => policy.length))
const RATE_LIMIT: Record<string, Header> = {
  RateLimit: header(
    'draft-ietf-httpapi-ratelimit-headers: `default;r=REMAINING;t=SECONDS`, requests left for this key in the current window and the seconds until it resets; on a 401 (and the 429 that replaces it once the address is past its quota) `auth;r=REMAINING;t=SECONDS`, the failed authentications this client address has left.',
    {
      maxLength: POLICY_LENGTH + ';r=;t=60'.length + LIMIT_DIGITS,
      pattern: `^${POLICY};r=[0-9]{1,${LIMIT_DIGITS}};t=[0-9]{1,2}$`,
    },
  ),
  'RateLimit-Policy': header(
    "draft-ietf-httpapi-ratelimit-headers: `default;q=QUOTA;w=60`, this key's quota per 60-second window: its own rate limit when it has one, else the service's; on a 401 `auth;q=QUOTA;w=60`, the failed authentications a client address may make per window (`AUTH_FAILURES_PER_MINUTE`).",
    { maxLength: POLICY_LENGTH + ';q=;w=60'.length + LIMIT_DIGITS, pattern: `^${POLICY};q=[0-9]{1,${LIMIT_DIGITS}};w=60$` },
  ),
}

const WWW_AUTHENTICATE = header(
  'RFC 6750 challenge: `Bearer realm="animal-store"`, plus `error="invalid_token"` for a wrong key.',
  { enum: CHALLENGES },
)

const HEADERS: Partial<Record<number, Record<string, Header>>> = {
  409: { 'Retry-After': header('Seconds to wait before retrying with the same key.', RETRY_AFTER_LIMITS) },
  401: { 'WWW-Authenticate': WWW_AUTHENTICATE },
  429: {
    'Retry-After': header(
      'RFC 9110 §10.2.3: seconds until the window resets and requests are counted again.',
      RETRY_AFTER_LIMITS,
    ),
  },
  403: {
    'WWW-Authenticate': header(
      'RFC 6750 §3.1 challenge: `Bearer realm="animal-store", error="insufficient_scope", scope="write"`, naming the scope the operation needs.',
      { enum: KEY_SCOPES.map(insufficientScopeChallenge) },
    ),
  },
  503: { 'Retry-After': header('RFC 9110 §10.2.3: seconds to wait before retrying.', RETRY_AFTER_LIMITS) },
}

/**
 * The headers many responses carry with the same meaning, by name: the document describes each once
 * (components/headers) and refers to it from every response that carries it.
 */
export const SHARED_HEADERS: Record<string, Header> = {
  ...EVERY_RESPONSE,
  ...CORS,
  ...RATE_LIMIT,
  'WWW-Authenticate': WWW_AUTHENTICATE,
}

/** Every header of a response with `status`, given the operation's own `extra` (Link, Location, …). */
function headersFor(status: number, extra: Record<string, Header>): Record<string, Header> {
  const read = !UNREAD.has(status)
  return { ...EVERY_RESPONSE, ...(read && CORS), ...(read && RATE_LIMIT), ...HEADERS[status], ...extra }
}

/** The ETag of a 200 that can be asked for conditionally (RFC 9110 §8.8.3). */
export const ETAG_HEADER = header(
  'RFC 9110 §8.8.3 strong entity tag of this representation (`"…"`, with `-br` or `-gzip` before the closing quote when the body is so compressed). Send it back in `If-None-Match` to get 304 without a body while it is still current.',
  { maxLength: ETAG_MAX_LENGTH, pattern: '^"[A-Za-z0-9_-]+"$' },
)

/**
 * The request headers of an operation that answers conditionally: If-None-Match (RFC 9110 §13.1.2).
 * Its length is bounded only by the request header limit (431 beyond it), stated here as the same number.
 */
export const ConditionalHeaders = Type.Object({
  'If-None-Match': Type.Optional(
    Type.String({
      maxLength: maxHeaderSize,
      description:
        'RFC 9110 §13.1.2: `*` or a list of entity tags from earlier `ETag` fields. When one matches the current representation (weak comparison), the answer is 304 without a body. Evaluated only after the API key is accepted.',
    }),
  ),
})

/**
 * The 304 of a conditional GET (RFC 9110 §15.4.5): no body; the ETag, Cache-Control and, for a
 * compressed representation, Vary, plus the operation's `headers` that go on every response.
 */
export function notModifiedResponse(headers: Record<string, Header> = {}): object {
  return {
    type: 'null',
    description:
      'Not Modified: `If-None-Match` matched the current representation. No body; keep using the stored one. Counts against the rate limit like any request.',
    headers: headersFor(304, {
      ...headers,
      ETag: ETAG_HEADER,
      Vary: header('`accept-encoding` when the representation the tag names is compressed.', { enum: ['accept-encoding'] }),
    }),
  }
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
