// Rate limits over a fixed one-minute window: per API key (429 `rate_limited` with Retry-After, and
// the IETF RateLimit-Policy / RateLimit fields of draft-ietf-httpapi-ratelimit-headers on every
// authenticated response, policy `default`), and per client address for requests that fail
// authentication (the same fields on each 401 and its 429, policy `auth`). Counted
// in this process's memory, synchronously (they run inside the one request step that also
// authenticates, request-pipeline.ts, without a promise turn); the per-key limit may instead be
// fleet-wide through the shared store (fleet-budget.ts), where only a request that finds its
// process's lease empty waits. Failed authentications are always counted per process: the limit
// guards each process's hashing, and a client with many addresses must not fill a shared store.
import type { FastifyReply } from 'fastify'
import { ApiError } from '../errors.js'

/** The window of both limits, in ms. */
export const WINDOW_MS = 60_000

/** The RateLimit policy names (draft-ietf-httpapi-ratelimit-headers): an API key's limit, and an address's failed authentications. */
export const RATE_LIMIT_POLICIES = ['default', 'auth'] as const

/**
 * The outcome of counting one event: whether it is within the limit, how many more the window
 * allows (fleet-wide when the counter is shared), and the seconds until the window ends.
 */
export interface Count {
  allowed: boolean
  remaining: number
  resetSeconds: number
}

/**
 * Counts one event of `client` against `limit` events per window: synchronously when it can, else
 * as a promise, which never rejects.
 */
export type BudgetCounter = (client: string, limit: number) => Count | Promise<Count>

/**
 * A counter in this process's memory. One window for every client, so starting a new one is
 * dropping the map: memory holds at most the clients of one minute. `now` (ms) is for tests.
 */
export function createLocalCounter(now: () => number = Date.now): (client: string, limit: number) => Count {
  let windowStart = now()
  let counts = new Map<string, number>()
  return (client, limit) => {
    const time = now()
    if (time - windowStart >= WINDOW_MS) {
      windowStart = time - ((time - windowStart) % WINDOW_MS)
      counts = new Map()
    }
    const count = (counts.get(client) ?? 0) + 1
    counts.set(client, count)
    return {
      allowed: count <= limit,
      remaining: Math.max(0, limit - count),
      resetSeconds: Math.ceil((windowStart + WINDOW_MS - time) / 1000),
    }
  }
}

function rateLimited(resetSeconds: number, options: { message?: string; headers?: Record<string, string> } = {}): ApiError {
  return new ApiError('rate_limited', { ...options, headers: { ...options.headers, 'retry-after': String(resetSeconds) } })
}

/** What a limiter decides: nothing (go on), or the ApiError to answer; a promise when it had to ask the shared store. */
export type Refusal = ApiError | undefined | Promise<ApiError | undefined>

/**
 * Counts one request of `client` (an API key's id) against `perMinute` requests per window (at
 * least 1: the key's own limit, else RATE_LIMIT_PER_MINUTE) and sets the RateLimit fields on `reply`; refuses with
 * ApiError `rate_limited` (with Retry-After, in seconds) once the client is past its quota.
 */
export type RateLimiter = (client: string, perMinute: number, reply: FastifyReply) => Refusal

// The RateLimit-Policy and RateLimit fields of one count against `quota` under `policy`.
function setRateLimitFields(
  reply: FastifyReply,
  policy: (typeof RATE_LIMIT_POLICIES)[number],
  quota: number,
  { remaining, resetSeconds }: Count,
): void {
  reply.header('ratelimit-policy', `${policy};q=${quota};w=${WINDOW_MS / 1000}`)
  reply.header('ratelimit', `${policy};r=${remaining};t=${resetSeconds}`)
}

/**
 * A limiter per API key per fixed window over `counter`: this process's own (every instance and
 * worker counts on its own) unless a shared one (fleet-budget.ts) is given.
 */
export function createRateLimiter(counter: BudgetCounter = createLocalCounter()): RateLimiter {
  const decide = (perMinute: number, reply: FastifyReply, count: Count) => {
    setRateLimitFields(reply, 'default', perMinute, count)
    return count.allowed ? undefined : rateLimited(count.resetSeconds)
  }
  return (client, perMinute, reply) => {
    const count = counter(client, perMinute)
    return count instanceof Promise ? count.then((settled) => decide(perMinute, reply, settled)) : decide(perMinute, reply, count)
  }
}

/**
 * Counts one failed authentication (no key, or a key that is not valid) from `address` and sets the
 * address's RateLimit fields (policy `auth`) on `reply`; refuses with ApiError `rate_limited` (with
 * Retry-After) to answer instead of the 401 once the address is past its quota.
 */
export type AuthFailureLimiter = (address: string, reply: FastifyReply) => Refusal

/**
 * A limiter of `perMinute` failed authentications per client address per fixed window, in this
 * process's memory. Its 429 closes the connection: an address past its quota gets no kept-alive
 * socket to go on guessing on.
 */
export function createAuthFailureLimiter(perMinute: number): AuthFailureLimiter {
  const counter = createLocalCounter()
  return (address, reply) => {
    const count = counter(address, perMinute)
    setRateLimitFields(reply, 'auth', perMinute, count)
    return count.allowed
      ? undefined
      : rateLimited(count.resetSeconds, {
          message: 'Too many requests without a valid API key from this address. Retry after the time in Retry-After.',
          headers: { connection: 'close' },
        })
  }
}
