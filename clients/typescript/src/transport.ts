// One call's trip to the service: the caller's signal and deadline, retries through ky (backoff,
// jitter, Retry-After up to a cap), and the failures mapped to NetworkError / TimeoutError.
import ky, { HTTPError, TimeoutError as KyTimeoutError } from 'ky'
import { AnimalStoreError, type CallContext, NetworkError, retryAfterMs, TimeoutError } from './errors.js'
import { parseJson } from './json.js'

/** Per-call options, taken by every method. */
export interface CallOptions {
  /** Cancels the call (retries and waits included); the call then rejects with `signal.reason`, as fetch does. */
  signal?: AbortSignal
  /** Deadline of the whole call, retries and waits included, in ms, or false for none; the client's `timeoutMs` unless given. */
  timeoutMs?: number | false
  /** The X-Request-Id to send (1–128 visible ASCII characters); a random UUID unless given. */
  requestId?: string
}

/** Reported to `onRetry` just before a request is sent again. */
export interface RetryEvent {
  /** 1 for the first retry, 2 for the second, … */
  retryCount: number
  /** Why: a NetworkError or TimeoutError, or the AnimalStoreError of a 409 / 429 / 503 answer. */
  error: Error
  /** The X-Request-Id of the call (the same on every attempt). */
  requestId: string
}

/** How the client retries and waits (see ClientOptions). */
export interface TransportOptions {
  retries: number
  maxBackoffMs: number
  maxRetryAfterMs: number
  attemptTimeoutMs: number | false
  timeoutMs: number | false
  onRetry: ((event: RetryEvent) => void | Promise<void>) | undefined
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>
}

/** Statuses retried: 409 (an earlier attempt of this create is still being stored), 429, 503. */
const RETRIED_STATUSES = [409, 429, 503]

/**
 * Sends `request` with retries, within the call's deadline and signal. Resolves with the last
 * response, 2xx or not. Rejects with TimeoutError (deadline or every attempt timed out),
 * NetworkError (no answer; `cause` is fetch's error), `call.signal.reason` when the caller aborted,
 * or whatever `onRetry` threw.
 * An answer whose Retry-After is over `maxRetryAfterMs`, or would end after the deadline, is
 * returned at once rather than waited for.
 */
export async function send(
  request: Request,
  transport: TransportOptions,
  call: CallOptions,
  context: CallContext,
): Promise<Response> {
  const deadlineMs = call.timeoutMs ?? transport.timeoutMs
  const deadline = deadlineMs === false ? undefined : AbortSignal.timeout(deadlineMs)
  const signals = [call.signal, deadline].filter((signal) => signal !== undefined)
  const endsAt = deadlineMs === false ? Number.POSITIVE_INFINITY : Date.now() + deadlineMs
  // An error thrown by the caller's onRetry is the caller's own: it is rethrown as is, not wrapped.
  let hookError: unknown
  try {
    return await ky(request, {
      fetch: transport.fetch,
      timeout: transport.attemptTimeoutMs,
      signal: signals.length > 0 ? AbortSignal.any(signals) : undefined,
      retry: {
        limit: transport.retries,
        methods: ['get', 'post'],
        statusCodes: RETRIED_STATUSES,
        afterStatusCodes: RETRIED_STATUSES,
        maxRetryAfter: transport.maxRetryAfterMs,
        backoffLimit: transport.maxBackoffMs,
        jitter: true,
        retryOnTimeout: true,
        shouldRetry: ({ error }) => {
          if (!(error instanceof HTTPError)) return undefined
          const wait = retryAfterMs(error.response.headers)
          if (wait !== undefined && (wait > transport.maxRetryAfterMs || Date.now() + wait > endsAt)) return false
          return undefined
        },
      },
      hooks: {
        beforeRetry: [
          async ({ error, retryCount }) => {
            const reason = await retryReason(error, transport, context)
            try {
              await transport.onRetry?.({ retryCount, error: reason, requestId: context.requestId })
            } catch (thrown) {
              hookError = thrown
              throw thrown
            }
          },
        ],
      },
    })
  } catch (error) {
    if (error instanceof HTTPError) return error.response
    if (hookError !== undefined && error === hookError) throw error
    if (call.signal?.aborted) throw call.signal.reason
    if (deadline?.aborted) throw new TimeoutError(`no answer within the call's deadline of ${deadlineMs} ms`, error, context)
    if (error instanceof KyTimeoutError) {
      const attempts = transport.retries + 1
      throw new TimeoutError(`no answer within ${transport.attemptTimeoutMs} ms, ${attempts} attempt(s)`, error, context)
    }
    throw new NetworkError(error, context)
  }
}

// The error a retry is about, as the caller would have seen it had it been the last attempt.
async function retryReason(error: Error, transport: TransportOptions, context: CallContext): Promise<Error> {
  if (error instanceof HTTPError) return new AnimalStoreError(error.response, await errorBody(error.response), context)
  if (error instanceof KyTimeoutError)
    return new TimeoutError(`no answer within ${transport.attemptTimeoutMs} ms`, error, context)
  return new NetworkError(error, context)
}

/** The body of an error response, parsed when it is JSON (from a clone: the response stays readable). */
async function errorBody(response: Response): Promise<unknown> {
  const text = await response.clone().text()
  try {
    return parseJson(text)
  } catch {
    return text
  }
}
