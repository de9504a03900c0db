// The errors every client call throws: AnimalStoreError for a non-2xx answer (the service's Error
// body `{code, message, status, details?}`, see openapi.json, plus the response's headers), and
// NetworkError / AnimalStoreTimeoutError when no answer arrived. Each class is named as it prints
// (`name` = the class's name), and none shares a name with a DOMException (`TimeoutError`, `AbortError`).
import type { components } from './generated/schema.js'
import { AnimalStoreError as AnimalStoreErrorClass } from './response-error.js'

/** The Error body of every error response, as openapi.json describes it. */
export type ErrorBody = components['schemas']['Error']
/** One failing input of a 400 `invalid_request`. */
export type ErrorDetail = components['schemas']['ErrorDetail']
/**
 * A stable error code from the service's catalog, or `unexpected_response` when the body was not
 * an Error body (e.g. an HTML page from a proxy in between).
 */
export type ErrorCode = ErrorBody['code'] | 'unexpected_response'

/** What the client knew about the call when it failed, beside the response. */
export interface CallContext {
  /** The X-Request-Id the client sent (the service echoes it). */
  requestId: string
  /** The Idempotency-Key of a createPet call. */
  idempotencyKey?: string | undefined
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

// fetch's own message is generic ("fetch failed"); what went wrong is in its innermost cause.
function describeCause(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause)
  let innermost: unknown = cause
  for (let depth = 0; depth < 8 && innermost instanceof Error && innermost.cause instanceof Error; depth++)
    innermost = innermost.cause
  return innermost === cause ? cause.message : `${cause.message} (${(innermost as Error).message})`
}

/** No answer arrived: the connection failed (refused, reset, DNS, CORS refused). `cause` is the fetch error. */
export class NetworkError extends Error {
  /** The X-Request-Id the client sent, for matching the service's logs. */
  readonly requestId: string
  /** On a failed createPet: its Idempotency-Key, to create again safely later. */
  readonly idempotencyKey: string | undefined

  /** Wraps `cause`, the error fetch threw; the message adds its innermost cause (`connect ECONNREFUSED …`). */
  constructor(cause: unknown, context: CallContext) {
    super(`no answer from the service: ${describeCause(cause)}`, { cause })
    this.name = 'NetworkError'
    this.requestId = context.requestId
    this.idempotencyKey = context.idempotencyKey
  }
}

/**
 * The call's deadline (`timeoutMs`) or every attempt's own timeout passed before an answer. Not
 * named `TimeoutError`: that is the `name` of the DOMException `AbortSignal.timeout()` rejects with.
 */
export class AnimalStoreTimeoutError extends Error {
  /** The X-Request-Id the client sent, for matching the service's logs. */
  readonly requestId: string
  /** On a failed createPet: its Idempotency-Key, to create again safely later. */
  readonly idempotencyKey: string | undefined

  /** `message` says which limit passed; `cause` is the underlying timeout error. */
  constructor(message: string, cause: unknown, context: CallContext) {
    super(message, { cause })
    this.name = 'AnimalStoreTimeoutError'
    this.requestId = context.requestId
    this.idempotencyKey = context.idempotencyKey
  }
}
