// One call's trip to the service: the caller's signal and deadline, retries through ky (backoff,
// jitter, Retry-After up to a cap), the request/response hooks, and the failures mapped to
// NetworkError / AnimalStoreTimeoutError.
import ky, { HTTPError, type Options as KyOptions, TimeoutError as KyTimeoutError } from 'ky'
import { AnimalStoreError, AnimalStoreTimeoutError, type CallContext, NetworkError } from './errors.js'
import { parseJson } from './json.js'
import { retryAfterMs } from './response-error.js'

/** Per-call options, taken by every method. Each may be given as `undefined`, meaning "not given". */
export interface CallOptions {
  /** Cancels the call (retries and waits included); the call then rejects with `signal.reason`, as fetch does. */
  signal?: AbortSignal | undefined
  /** Deadline of the whole call, retries and waits included, in ms, or false for none; the client's `timeoutMs` unless given. */
  timeoutMs?: number | false | undefined
  /** The X-Request-Id to send (1–128 visible ASCII characters); a random UUID unless given. */
  requestId?: string | undefined
  /** Retries after the first attempt for this call (0 = none); the client's `retries` unless given. */
  retries?: number | undefined
}

/** Reported to `onRetry` just before a request is sent again. */
export interface RetryEvent {
  /** 1 for the first retry, 2 for the second, … */
  retryCount: number
  /** Why: a NetworkError or AnimalStoreTimeoutError, or the AnimalStoreError of a 409 / 429 / 502 / 503 / 504 answer. */
  error: Error
  /** The X-Request-Id of the call (the same on every attempt). */
  requestId: string
}

/** Reported to `onRequest` as each attempt is sent (no credentials: the Authorization header is not in it). */
export interface RequestEvent {
  /** `GET` or `POST`. */
  method: string
  /** The full URL, query included. */
  url: string
  /** 1 for the first attempt, 2 for the first retry, … */
  attempt: number
  /** The X-Request-Id of the call (the same on every attempt). */
  requestId: string
  /** The Idempotency-Key of a createPet call (the same on every attempt). */
  idempotencyKey: string | undefined
}

/** Reported to `onResponse` as each attempt's answer arrives, before it is retried or returned. */
export interface ResponseEvent extends RequestEvent {
  /** The HTTP status. */
  status: number
  /** The response's headers (RateLimit, X-Request-Id, Idempotent-Replayed, …). */
  headers: Headers
  /** From sending the attempt to its response headers, in ms. */
  durationMs: number
}

/** A hook of the caller's: awaited; what it throws ends the call with that error, unwrapped. */
type Hook<E> = ((event: E) => void | Promise<void>) | undefined

/** How the client retries and waits, and its hooks (see ClientOptions). */
export interface TransportOptions {
  retries: number
  maxBackoffMs: number
  maxRetryAfterMs: number
  attemptTimeoutMs: number | false
  timeoutMs: number | false
  onRetry: Hook<RetryEvent>
  onRequest: Hook<RequestEvent>
  onResponse: Hook<ResponseEvent>
  fetch: (input: string | URL | Request, init?: RequestInit) => Promise<Response>
}

/**
 * Statuses retried: 409 (an earlier attempt of this create is still being stored), 429, 503, and a
 * balancer's 502 and 504 (its upstream failed or was slow: the next attempt may reach another
 * instance). Each is safe to repeat: GETs change nothing, and every attempt of a create carries the
 * same Idempotency-Key, so one that reached the service is answered with the first result.
 */
const RETRIED_STATUSES = [409, 429, 502, 503, 504]

/**
 * The number of retries to use: `retries` when it is a whole number from 0 up; throws RangeError
 * naming `option` otherwise.
 */
export function retryLimit(retries: number, option: string): number {
  if (!Number.isSafeInteger(retries) || retries < 0)
    throw new RangeError(`${option} must be a whole number 0 or more, not ${retries}`)
  return retries
}

/**
 * Sends `request` with retries, within the call's deadline and signal. Resolves with the last
 * response, 2xx or not. Rejects with AnimalStoreTimeoutError (deadline or every attempt timed out),
 * NetworkError (no answer; `cause` is fetch's error), `call.signal.reason` when the caller aborted,
 * or whatever a hook (`onRequest`, `onResponse`, `onRetry`) threw.
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
  const retries = call.retries === undefined ? transport.retries : retryLimit(call.retries, 'retries')
  const hooks = callerHooks(transport, context)
  try {
    return await ky(request, {
      fetch: transport.fetch,
      timeout: transport.attemptTimeoutMs,
      signal: signals.length > 0 ? AbortSignal.any(signals) : undefined,
      retry: retryOptions(transport, retries, deadlineMs === false ? Number.POSITIVE_INFINITY : Date.now() + deadlineMs, hooks),
      hooks: hooks.ky,
    })
  } catch (error) {
    if (error instanceof HTTPError) return error.response
    if (hooks.threw(error)) throw error
    if (call.signal?.aborted) throw call.signal.reason
    if (deadline?.aborted)
      throw new AnimalStoreTimeoutError(`no answer within the call's deadline of ${deadlineMs} ms`, error, context)
    if (error instanceof KyTimeoutError) {
      const message = `no answer within ${transport.attemptTimeoutMs} ms, ${retries + 1} attempt(s)`
      throw new AnimalStoreTimeoutError(message, error, context)
    }
    throw new NetworkError(error, context)
  }
}

// ky's retry settings: which statuses, how long to wait, and no retry after a hook of the caller's
// threw (ky would otherwise take it for a network error) or when Retry-After is past the cap or the
// deadline (`endsAt`, epoch ms).
function retryOptions(
  transport: TransportOptions,
  limit: number,
  endsAt: number,
  hooks: ReturnType<typeof callerHooks>,
): KyOptions['retry'] {
  return {
    limit,
    methods: ['get', 'post'],
    statusCodes: RETRIED_STATUSES,
    afterStatusCodes: RETRIED_STATUSES,
    maxRetryAfter: transport.maxRetryAfterMs,
    backoffLimit: transport.maxBackoffMs,
    jitter: true,
    retryOnTimeout: true,
    shouldRetry: ({ error }) => {
      if (hooks.threw(error)) return false
      if (!(error instanceof HTTPError)) return undefined
      const wait = retryAfterMs(error.response.headers)
      if (wait !== undefined && (wait > transport.maxRetryAfterMs || Date.now() + wait > endsAt)) return false
      return undefined
    },
  }
}

// The caller's onRequest / onResponse / onRetry as ky hooks, and `threw(error)`: whether `error` is
// one a caller's hook threw, which ends the call as it is (neither retried nor wrapped).
function callerHooks(transport: TransportOptions, context: CallContext) {
  const thrown = new Set<unknown>()
  const run = async <E>(hook: Hook<E>, event: E) => {
    try {
      await hook?.(event)
    } catch (error) {
      thrown.add(error)
      throw error
    }
  }
  const sentAt: number[] = []
  const base = (request: Request, retryCount: number): RequestEvent => ({
    method: request.method,
    url: request.url,
    attempt: retryCount + 1,
    requestId: context.requestId,
    idempotencyKey: context.idempotencyKey,
  })
  const ky: KyOptions['hooks'] = {
    beforeRequest: [
      async (request, _options, { retryCount }) => {
        sentAt[retryCount] = performance.now()
        await run(transport.onRequest, base(request, retryCount))
      },
    ],
    afterResponse: transport.onResponse
      ? [
          async (request, _options, response, { retryCount }) => {
            const durationMs = performance.now() - (sentAt[retryCount] ?? performance.now())
            const event = { ...base(request, retryCount), status: response.status, headers: response.headers, durationMs }
            await run(transport.onResponse, event)
          },
        ]
      : [],
    beforeRetry: [
      async ({ error, retryCount }) => {
        const reason = await retryReason(error, transport, context)
        await run(transport.onRetry, { retryCount, error: reason, requestId: context.requestId })
      },
    ],
  }
  return { ky, threw: (error: unknown) => thrown.has(error) }
}

// The error a retry is about, as the caller would have seen it had it been the last attempt.
async function retryReason(error: Error, transport: TransportOptions, context: CallContext): Promise<Error> {
  if (error instanceof HTTPError) return new AnimalStoreError(error.response, await errorBody(error.response), context)
  if (error instanceof KyTimeoutError)
    return new AnimalStoreTimeoutError(`no answer within ${transport.attemptTimeoutMs} ms`, error, context)
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
