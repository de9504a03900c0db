// Rate limiting per API key: a fixed one-minute window counted in this process's memory, 429
// `rate_limited` with Retry-After, and the IETF RateLimit-Policy / RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) on every authenticated response. Synchronous, so it runs
// inside the one request step that also authenticates (request-pipeline.ts) without a promise turn.
import type { FastifyReply } from 'fastify'
import { ApiError } from './errors.js'

/** The window of RATE_LIMIT_PER_MINUTE, in ms. */
const WINDOW_MS = 60_000
const POLICY = 'default'

/**
 * Counts one request of `client` (an API key's id) and sets the RateLimit fields on `reply`; returns
 * ApiError `rate_limited` (with Retry-After, in seconds) once the client is past its quota.
 */
export type RateLimiter = (client: string, reply: FastifyReply) => ApiError | undefined

/**
 * A limiter of `perMinute` requests per client per fixed window (per process: every instance and
 * worker counts on its own). `now` (ms) is for tests.
 */
export function createRateLimiter(perMinute: number, now: () => number = Date.now): RateLimiter {
  const policy = `${POLICY};q=${perMinute};w=${WINDOW_MS / 1000}`
  let windowStart = now()
  let counts = new Map<string, number>()
  return (client, reply) => {
    const time = now()
    // One window for every client, so starting a new one is dropping the map: memory holds at most
    // the clients of one minute.
    if (time - windowStart >= WINDOW_MS) {
      windowStart = time - ((time - windowStart) % WINDOW_MS)
      counts = new Map()
    }
    const count = (counts.get(client) ?? 0) + 1
    counts.set(client, count)
    const resetSeconds = Math.ceil((windowStart + WINDOW_MS - time) / 1000)
    reply.header('ratelimit-policy', policy)
    reply.header('ratelimit', `${POLICY};r=${Math.max(0, perMinute - count)};t=${resetSeconds}`)
    if (count <= perMinute) return undefined
    return new ApiError('rate_limited', { headers: { 'retry-after': String(resetSeconds) } })
  }
}
