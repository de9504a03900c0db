// The error every client call throws for a non-2xx answer: the service's Error body
// (`{code, message, status, details?}`, see openapi.json) plus the response's X-Request-Id.
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

function isErrorBody(body: unknown): body is ErrorBody {
  if (typeof body !== 'object' || body === null) return false
  const { code, message, status } = body as Record<string, unknown>
  return typeof code === 'string' && typeof message === 'string' && typeof status === 'number'
}

/**
 * A non-2xx answer from Animal Store. Match on `code` (stable), not on `message`.
 * `requestId` is the response's X-Request-Id: quote it when reporting a problem.
 */
export class AnimalStoreError extends Error {
  /** The HTTP status of the response. */
  readonly status: number
  /** The catalog code (`pet_not_found`, `rate_limited`, …). */
  readonly code: ErrorCode
  /** For 400 `invalid_request`: every failing input. */
  readonly details: ErrorDetail[] | undefined
  /** The response's X-Request-Id, when it carried one. */
  readonly requestId: string | undefined

  /** Builds the error from a response and its body (already parsed, or the raw text if not JSON). */
  constructor(response: Response, body: unknown) {
    const known = isErrorBody(body)
    super(known ? body.message : `unexpected ${response.status} response from ${response.url}`)
    this.name = 'AnimalStoreError'
    this.status = response.status
    this.code = known ? body.code : 'unexpected_response'
    this.details = known ? body.details : undefined
    this.requestId = response.headers.get('x-request-id') ?? undefined
  }
}
