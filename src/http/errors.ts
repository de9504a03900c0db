// The error catalog (stable codes → status and message), the Error body schema, ApiError, and the one
// error handler that writes every error response as docs/specification.md, Errors says:
// `{code, message, status}`.
import { randomUUID } from 'node:crypto'
import type { Duplex } from 'node:stream'
import { type Static, Type } from '@sinclair/typebox'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { BODY_LIMIT_BYTES } from '../schemas.js'
import { StoreUnavailableError } from '../store/unavailable.js'
import { SERVER_TIMEOUTS } from './connection/timeouts.js'
import { maxHeaderSize, STATUS_CODES } from './node-http.js'
import { unavailableCause } from './observability/unavailable-log.js'
import { API_HEADERS } from './pipeline/api-headers.js'

/**
 * Bounds of the Error body, in characters (Unicode code points, as JSON Schema counts them) and
 * entries: a detail names client input (an unknown field's name may be kilobytes long), so what the
 * body repeats is cut to these (ApiError.toBody), and openapi.json states the same numbers.
 */
export const ERROR_BODY_LIMITS = { message: 256, field: 256, details: 32 } as const

/** The 400 message for a createPet without a body, whichever step finds it missing. */
export const BODY_REQUIRED_MESSAGE = 'A request body is required.'

/**
 * Every error code the service answers with, its HTTP status and default message. Codes are
 * lower_snake, stable, and listed in openapi.json and the README (a test checks all three agree).
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, message: 'The request has missing or invalid values; see details.' },
  invalid_json: { status: 400, message: 'The request body is not valid JSON.' },
  missing_api_key: { status: 401, message: 'An API key is required: send "Authorization: Bearer <API_KEY>".' },
  invalid_api_key: { status: 401, message: 'The API key is not valid, or has been revoked.' },
  insufficient_scope: {
    status: 403,
    message: 'The API key may not use this operation: it needs the scope named in WWW-Authenticate.',
  },
  not_found: { status: 404, message: 'There is no resource at this path.' },
  pet_not_found: { status: 404, message: 'No animal with that identifier.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this resource; see the Allow header.' },
  request_timeout: {
    status: 408,
    message: `The request did not arrive in time (headers within ${SERVER_TIMEOUTS.headersTimeout / 1000} s, all of it within ${SERVER_TIMEOUTS.requestTimeout / 1000} s).`,
  },
  idempotency_key_in_flight: {
    status: 409,
    message: 'A request with this Idempotency-Key is still being processed. Retry after the time in Retry-After.',
  },
  body_too_large: { status: 413, message: `The request body is larger than ${BODY_LIMIT_BYTES} bytes.` },
  unsupported_media_type: { status: 415, message: 'The request body must be JSON: Content-Type: application/json.' },
  idempotency_key_reused: {
    status: 422,
    message: 'This Idempotency-Key was already used with a different request; use a new key for a new request.',
  },
  headers_too_large: { status: 431, message: `The request headers are too large (${maxHeaderSize / 1024} KiB at most).` },
  rate_limited: { status: 429, message: 'Too many requests with this API key. Retry after the time in Retry-After.' },
  internal_error: { status: 500, message: 'An unexpected error occurred. It has been logged.' },
  service_unavailable: { status: 503, message: 'The service is temporarily unavailable. Retry later.' },
} as const satisfies Record<string, { status: number; message: string }>

/**
 * Retry-After (RFC 9110 §10.2.3) on every 503, in seconds: long enough for a pool to reconnect or a
 * PostgreSQL failover to start answering, short enough that a client's retries stay within its deadline.
 */
export const SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS = 2

/** One of the stable error codes of ERROR_CODES. */
export type ErrorCode = keyof typeof ERROR_CODES

/** One failing input of a 400 `invalid_request`. */
export const ErrorDetail = Type.Object(
  {
    in: Type.Unsafe<'body' | 'query' | 'path' | 'header'>({
      type: 'string',
      enum: ['body', 'query', 'path', 'header'],
      description: 'Where the failing input is.',
    }),
    field: Type.String({
      maxLength: ERROR_BODY_LIMITS.field,
      description: `Dotted path of the failing field (a header by its lowercase name); empty when the whole body or query is at fault. Cut to its first ${ERROR_BODY_LIMITS.field} characters.`,
    }),
    message: Type.String({ maxLength: ERROR_BODY_LIMITS.message, description: 'What is wrong with it.' }),
  },
  { $id: 'ErrorDetail', additionalProperties: false },
)
export type ErrorDetail = Static<typeof ErrorDetail>

// The first `max` code points of `text` (a UTF-16 length within `max` has no more code points).
function cut(text: string, max: number): string {
  return text.length <= max ? text : Array.from(text).slice(0, max).join('')
}

/** The Error body of every error response (docs/specification.md, Error); `status` repeats the HTTP status. */
export const ErrorBody = Type.Object(
  {
    code: Type.Unsafe<ErrorCode>({
      type: 'string',
      enum: Object.keys(ERROR_CODES),
      description: 'Machine-readable, stable error code (the catalog is in the README).',
    }),
    message: Type.String({ maxLength: ERROR_BODY_LIMITS.message, description: 'Human-readable description.' }),
    status: Type.Integer({ minimum: 400, maximum: 599, description: 'The HTTP status code of the response.' }),
    details: Type.Optional(
      Type.Array(Type.Unsafe<ErrorDetail>({ $ref: 'ErrorDetail' }), {
        maxItems: ERROR_BODY_LIMITS.details,
        description: `With \`invalid_request\` only: every failing input (the first ${ERROR_BODY_LIMITS.details} when there are more).`,
      }),
    ),
  },
  { $id: 'Error', additionalProperties: false, description: 'The body of every error response.' },
)
export type ErrorBody = Static<typeof ErrorBody>

/**
 * An error with a catalog code; throw it from a handler or hook and the error handler writes it.
 * `headers` are added to the response (`WWW-Authenticate`, `Allow`, …).
 */
export class ApiError extends Error {
  readonly code: ErrorCode
  readonly statusCode: number
  readonly details: ErrorDetail[] | undefined
  readonly headers: Record<string, string>

  constructor(
    code: ErrorCode,
    options: { message?: string; details?: ErrorDetail[]; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    // An ApiError is an answer, not a fault: no stack trace to capture (a 401 is 9% cheaper without
    // one). A 5xx keeps its `cause`, which has its own stack for the log.
    const stackTraceLimit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(options.message ?? ERROR_CODES[code].message, { cause: options.cause })
    Error.stackTraceLimit = stackTraceLimit
    this.name = 'ApiError'
    this.code = code
    this.statusCode = ERROR_CODES[code].status
    this.details = options.details
    this.headers = options.headers ?? {}
    if (this.statusCode === 503) this.headers['retry-after'] ??= String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS)
  }

  /** The Error body of this error (docs/specification.md, Error). */
  toBody(): ErrorBody {
    const body: ErrorBody = { code: this.code, message: cut(this.message, ERROR_BODY_LIMITS.message), status: this.statusCode }
    if (this.details) {
      body.details = this.details.slice(0, ERROR_BODY_LIMITS.details).map((detail) => ({
        in: detail.in,
        field: cut(detail.field, ERROR_BODY_LIMITS.field),
        message: cut(detail.message, ERROR_BODY_LIMITS.message),
      }))
    }
    return body
  }
}

/**
 * Fastify's own request errors (parsing, limits) mapped to the catalog. Anything not listed here
 * that is not an ApiError is a 500 `internal_error`.
 */
const FASTIFY_ERRORS: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
}

/**
 * The Error-catalog view of any error thrown while handling a request. Never exposes internals:
 * Fastify's other client errors (any 4xx it raises: malformed URL, bad Content-Length, …) become
 * `invalid_request`; everything else unknown is `internal_error`.
 */
function toApiError(error: FastifyError | ApiError | Error): ApiError {
  if (error instanceof ApiError) return error
  if (error instanceof StoreUnavailableError) return new ApiError('service_unavailable', { cause: error })
  const { code: fastifyCode = '', statusCode = 500 } = error as Partial<FastifyError>
  const code = FASTIFY_ERRORS[fastifyCode]
  if (code) return new ApiError(code, { cause: error })
  if (statusCode >= 400 && statusCode < 500) {
    const message = fastifyCode === 'FST_ERR_CTP_EMPTY_JSON_BODY' ? BODY_REQUIRED_MESSAGE : 'The request is malformed.'
    return new ApiError('invalid_request', { message, details: [], cause: error })
  }
  return new ApiError('internal_error', { cause: error })
}

/**
 * Node's `clientError` (bytes that are not HTTP, headers over 16 KiB, a request too slow to arrive):
 * answers with the Error body too, then closes the connection, as Node itself would. Like Node, it
 * writes nothing when the request's answer has already begun on the socket (a body that fails to
 * parse after an early answer): one request, one answer.
 */
export function handleClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  // Node's own rule (lib/_http_server.js): the response in progress on the socket, if its head went out.
  const answering = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage
  if (socket.writable && !answering?.headersSent) {
    const apiError =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large')
        : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new ApiError('request_timeout')
          : new ApiError('invalid_request', { message: 'The request is not valid HTTP/1.1.', details: [] })
    const body = JSON.stringify(apiError.toBody())
    // The request's headers did not parse, so a client's own X-Request-Id cannot be read: a new one.
    const head = [
      `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode]}`,
      'Content-Type: application/json; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `X-Request-Id: ${randomUUID()}`,
      ...Object.entries(API_HEADERS).map(([name, value]) => `${name}: ${value}`),
      'Connection: close',
    ]
    socket.write(`${head.join('\r\n')}\r\n\r\n${body}`)
  }
  socket.destroy()
}

/**
 * Fastify error handler: writes the Error body; logs 5xx with their cause (the database being
 * unavailable, counted per interval by app.unavailableLog), never sends it.
 */
export function handleError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiError = toApiError(error)
  // A 5xx a handler chose to answer, without a fault behind it (/readyz while draining, or once it
  // logged the cause itself), is an answer, not a failure to log.
  const deliberate = error instanceof ApiError && error.cause === undefined
  if (apiError.statusCode >= 500 && !deliberate) {
    // A database outage fails every request alike: counted, without a stack (unavailable-log.ts).
    const unavailable = unavailableCause(error)
    if (unavailable && request.server.unavailableLog) request.server.unavailableLog(unavailable, request)
    else request.log.error({ reqId: request.id, err: error }, 'request failed')
  }
  // The request id here too: an error the router raises (an undecodable URL) skips the hooks that set it.
  return reply
    .code(apiError.statusCode)
    .header('x-request-id', request.id)
    .headers(API_HEADERS)
    .headers(apiError.headers)
    .send(apiError.toBody())
}
