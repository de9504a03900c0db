// The errors every client call throws: AnimalStoreError for a non-2xx answer (the service's Error
// body `{code, message, status, details?}`, see openapi.json, plus the response's headers), and
// NetworkError / TimeoutError when no answer arrived.
import type { components } from './generated/schema.js'

/** The Error body of every error response, as openapi.json describes it. */
export type ErrorBody = components['schemas']['Error']
/** One failing input of a 400 `invalid_request`. */
export type ErrorDetail = components['schemas']['ErrorDetail']
/**
 * A stable error code from the service's catalog, or `unexpected_response` when the body was not
 * an Error body (e.g. an HTML page from a proxy in between).
 */
export type ErrorCode = ErrorBody['code'] | 'unexpected_response'

/** Statuses whose Retry-After the client reads (the service sends it on each). */
const RETRY_AFTER_STATUSES = new Set([409, 429, 503])

/** What the client knew about the call when it failed, beside the response. */
export interface CallContext {
  /** The X-Request-Id the client sent (the service echoes it). */
  requestId: string
  /** The Idempotency-Key of a createPet call. */
  idempotencyKey?: string | undefined
}

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false
  const { code, message, status } = body as Record<string, unknown>
  return typeof code === 'string' && typeof message === 'string' && typeof status === 'number'
}

/**
 * Retry-After (RFC 9110 §10.2.3) in ms: delay-seconds or an HTTP date; undefined when absent or
 * unreadable.
 */
export function retryAfterMs(headers: Headers): number | undefined {
  const value = headers.get('retry-after')?.trim()
  if (!value) return undefined
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

class AnimalStoreErrorClass extends Error {
  /** The HTTP status of the response. */
  readonly status: number
  /** The catalog code (`pet_not_found`, `rate_limited`, …); narrows `details`. */
  readonly code: ErrorCode
  /** For 400 `invalid_request` only: every failing input. */
  readonly details: ErrorDetail[] | undefined
  /** The response's X-Request-Id, else the one the client sent: quote it when reporting a problem. */
  readonly requestId: string
  /** On 409, 429 and 503: how long the service asked to wait (Retry-After), in ms. */
  readonly retryAfterMs: number | undefined
  /** On a failed createPet: its Idempotency-Key; create again with it and no second animal is added. */
  readonly idempotencyKey: string | undefined
  /** Every header of the response (RateLimit, WWW-Authenticate, …). */
  readonly headers: Headers

  /** Builds the error from a response, its body (parsed, or the raw text) and the call's context. */
  constructor(response: Response, body: unknown, context: CallContext) {
    const known = isErrorBody(body)
    super(known ? body.message : `unexpected ${response.status} response from ${response.url}`)
    this.name = 'AnimalStoreError'
    this.status = response.status
    this.code = known ? body.code : 'unexpected_response'
    this.details = known && body.code === 'invalid_request' ? (body.details ?? []) : undefined
    this.requestId = response.headers.get('x-request-id') ?? context.requestId
    this.retryAfterMs = RETRY_AFTER_STATUSES.has(response.status) ? retryAfterMs(response.headers) : undefined
    this.idempotencyKey = context.idempotencyKey
    this.headers = response.headers
  }
}

/** An `invalid_request` (400): `details` lists every failing input. */
export type InvalidRequestError = AnimalStoreErrorClass & { readonly code: 'invalid_request'; readonly details: ErrorDetail[] }
/** Any other non-2xx answer: no `details`. */
export type OtherAnimalStoreError = AnimalStoreErrorClass & {
  readonly code: Exclude<ErrorCode, 'invalid_request'>
  readonly details: undefined
}

/**
 * A non-2xx answer from Animal Store. Match on `code` (stable), not on `message`: after
 * `error.code === 'invalid_request'`, `error.details` is an array. `requestId` is always set,
 * `retryAfterMs` on 409/429/503 when the service sent Retry-After, `idempotencyKey` on createPet.
 */
export type AnimalStoreError = InvalidRequestError | OtherAnimalStoreError
/** The AnimalStoreError class, for `instanceof` (typed so that `code` narrows the instance). */
export const AnimalStoreError = AnimalStoreErrorClass as unknown as {
  new (response: Response, body: unknown, context: CallContext): AnimalStoreError
  readonly prototype: AnimalStoreError
}

/** No answer arrived: the connection failed (refused, reset, DNS, CORS refused). `cause` is the fetch error. */
export class NetworkError extends Error {
  /** The X-Request-Id the client sent, for matching the service's logs. */
  readonly requestId: string
  /** On a failed createPet: its Idempotency-Key, to create again safely later. */
  readonly idempotencyKey: string | undefined

  /** Wraps `cause`, the error fetch threw. */
  constructor(cause: unknown, context: CallContext) {
    super(`no answer from the service: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'NetworkError'
    this.requestId = context.requestId
    this.idempotencyKey = context.idempotencyKey
  }
}

/** The call's deadline (`timeoutMs`) or every attempt's own timeout passed before an answer. */
export class TimeoutError extends Error {
  /** The X-Request-Id the client sent, for matching the service's logs. */
  readonly requestId: string
  /** On a failed createPet: its Idempotency-Key, to create again safely later. */
  readonly idempotencyKey: string | undefined

  /** `message` says which limit passed; `cause` is the underlying timeout error. */
  constructor(message: string, cause: unknown, context: CallContext) {
    super(message, { cause })
    this.name = 'TimeoutError'
    this.requestId = context.requestId
    this.idempotencyKey = context.idempotencyKey
  }
}
