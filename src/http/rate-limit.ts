// Rate limiting per API key (@fastify/rate-limit's counters, in this process's memory): a fixed
// one-minute window, 429 `rate_limited` with Retry-After, and the IETF RateLimit-Policy / RateLimit
// fields (draft-ietf-httpapi-ratelimit-headers) on every authenticated response.
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

/** The window of RATE_LIMIT_PER_MINUTE, in ms. */
const WINDOW_MS = 60_000
const POLICY = 'default'

/** Counts one request of the key with this hash; sets the RateLimit fields; throws `rate_limited` past the quota. */
export type RateLimiter = (request: FastifyRequest, reply: FastifyReply, keyHash: string) => Promise<void>

/**
 * Registers the limiter for `perMinute` requests per API key per minute (per process: every
 * instance and worker counts on its own). Call before the routes; use the result after authentication.
 */
export async function createRateLimiter(app: FastifyInstance, perMinute: number): Promise<RateLimiter> {
  await app.register(rateLimit, { global: false })
  const keys = new WeakMap<FastifyRequest, string>()
  const check = app.createRateLimit({
    max: perMinute,
    timeWindow: WINDOW_MS,
    keyGenerator: (request) => keys.get(request) ?? '',
  })
  return async (request, reply, keyHash) => {
    keys.set(request, keyHash)
    const limit = await check(request)
    if (limit.isAllowed) return
    reply.header('ratelimit-policy', `${POLICY};q=${perMinute};w=${WINDOW_MS / 1000}`)
    reply.header('ratelimit', `${POLICY};r=${limit.remaining};t=${limit.ttlInSeconds}`)
    if (limit.isExceeded) {
      throw new ApiError('rate_limited', { headers: { 'retry-after': String(limit.ttlInSeconds) } })
    }
  }
}
