// The class behind AnimalStoreError (errors.ts types it so that `code` narrows `details`), in a
// file of its own so that the class itself is named AnimalStoreError, as stack traces print it.
import type { CallContext, ErrorBody, ErrorCode, ErrorDetail } from './errors.js'

/** Statuses whose Retry-After the client reads (the service sends it on each). */
const RETRY_AFTER_STATUSES = new Set([409, 429, 503])

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

/** A non-2xx answer; the public type is errors.ts's AnimalStoreError. */
export class AnimalStoreError extends Error {
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
