// Rate limits, counted in this process's memory over a fixed one-minute window: per API key (429
// `rate_limited` with Retry-After, and the IETF RateLimit-Policy / RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers on every authenticated response), and per client address for
// requests that fail authentication. Synchronous, so they run inside the one request step that also
// authenticates (request-pipeline.ts) without a promise turn.
import type { FastifyReply } from 'fastify'
import { ApiError } from '../errors.js'

/** The window of both limits, in ms. */
const WINDOW_MS = 60_000
const POLICY = 'default'

/** Counts one event of `client`: its count in the current window, and seconds until that window ends. */
type WindowCounter = (client: string) => { count: number; resetSeconds: number }

// One window for every client, so starting a new one is dropping the map: memory holds at most the
// clients of one minute.
function createWindowCounter(now: () => number): WindowCounter {
  let windowStart = now()
  let counts = new Map<string, number>()
  return (client) => {
    const time = now()
    if (time - windowStart >= WINDOW_MS) {
      windowStart = time - ((time - windowStart) % WINDOW_MS)
      counts = new Map()
    }
    const count = (counts.get(client) ?? 0) + 1
    counts.set(client, count)
    return { count, resetSeconds: Math.ceil((windowStart + WINDOW_MS - time) / 1000) }
  }
}

function rateLimited(resetSeconds: number, options: { message?: string; headers?: Record<string, string> } = {}): ApiError {
  return new ApiError('rate_limited', { ...options, headers: { ...options.headers, 'retry-after': String(resetSeconds) } })
}

/**
 * Counts one request of `client` (an API key's id), whose quota is `perMinute` requests (at least 1:
 * that key's own limit, else RATE_LIMIT_PER_MINUTE), and sets the RateLimit fields on `reply`;
 * returns ApiError `rate_limited` (with Retry-After, in seconds) once the client is past its quota.
 */
export type RateLimiter = (client: string, perMinute: number, reply: FastifyReply) => ApiError | undefined

/**
 * A limiter of requests per API key per fixed window, each key's quota given with each request (per
 * process: every instance and worker counts on its own). `now` (ms) is for tests.
 */
export function createRateLimiter(now: () => number = Date.now): RateLimiter {
  const count = createWindowCounter(now)
  return (client, perMinute, reply) => {
    const { count: used, resetSeconds } = count(client)
    reply.header('ratelimit-policy', `${POLICY};q=${perMinute};w=${WINDOW_MS / 1000}`)
    reply.header('ratelimit', `${POLICY};r=${Math.max(0, perMinute - used)};t=${resetSeconds}`)
    return used <= perMinute ? undefined : rateLimited(resetSeconds)
  }
}

/**
 * Counts one failed authentication (no key, or a key that is not valid) from `address`; returns
 * ApiError `rate_limited` (with Retry-After) to answer instead of the 401 once the address is past
 * its quota, else undefined.
 */
export type AuthFailureLimiter = (address: string) => ApiError | undefined

/** A limiter of `perMinute` failed authentications per client address per fixed window (per process). */
export function createAuthFailureLimiter(perMinute: number, now: () => number = Date.now): AuthFailureLimiter {
  const count = createWindowCounter(now)
  return (address) => {
    const { count: failures, resetSeconds } = count(address)
    if (failures <= perMinute) return undefined
    return rateLimited(resetSeconds, {
      message: 'Too many requests without a valid API key from this address. Retry after the time in Retry-After.',
      headers: { connection: 'close' },
    })
  }
}
