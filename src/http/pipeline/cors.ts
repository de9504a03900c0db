// Cross-origin access for browsers (the Fetch standard's CORS protocol) through @fastify/cors, on only
// when CORS_ORIGINS lists origins: which request headers a page may send, which response headers it
// may read, and how the request pipeline recognises a preflight it must let through without a key.
import cors from '@fastify/cors'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { CONSISTENCY_TOKEN_HEADER } from '../routes/consistency-token.js'

/**
 * Request headers a page may send: the key, JSON bodies, safe retries, conditional reads, reads that
 * include its own writes, and its own request id.
 */
export const CORS_ALLOWED_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'If-None-Match',
  CONSISTENCY_TOKEN_HEADER,
  'X-Request-Id',
]

/**
 * Response headers a page may read besides the CORS-safelisted ones (paging, limits, deprecation,
 * tracing, the 401 challenge, a replayed create, the entity tag, a create's consistency token).
 */
export const CORS_EXPOSED_HEADERS = [
  CONSISTENCY_TOKEN_HEADER,
  'ETag',
  'Idempotent-Replayed',
  'Link',
  'Location',
  'RateLimit',
  'RateLimit-Policy',
  'Retry-After',
  'Deprecation',
  'Sunset',
  'WWW-Authenticate',
  'X-Request-Id',
]

/** How long a browser may reuse a preflight's answer, in seconds (Access-Control-Max-Age). */
const CORS_MAX_AGE_SECONDS = 600

// Whether `request` is a CORS preflight (Fetch standard, "CORS-preflight request"): OPTIONS with
// `Origin` and `Access-Control-Request-Method`. Browsers never send credentials on one, so it is
// answered without a key; a plain OPTIONS is not a preflight and needs a key like any request.
function isPreflight(request: FastifyRequest): boolean {
  return (
    request.method === 'OPTIONS' &&
    request.headers.origin !== undefined &&
    request.headers['access-control-request-method'] !== undefined
  )
}

/**
 * Registers @fastify/cors for exactly `origins`; register it before the request pipeline, so its
 * headers are on every response, errors included (a page cannot read a 401 or a 429, nor its
 * Retry-After, without them). A preflight from any origin is answered 204 by its onRequest step,
 * before authentication (browsers never send a key on one); an origin not listed gets no
 * Access-Control-Allow-Origin, so the browser refuses. Any other OPTIONS is left to the pipeline,
 * which asks for a key and then answers 405 or 404, as without CORS.
 */
export async function registerCors(app: FastifyInstance, origins: readonly string[]): Promise<void> {
  const allowed = {
    origin: [...origins],
    methods: ['GET', 'HEAD', 'POST'],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: CORS_MAX_AGE_SECONDS,
    strictPreflight: true,
  }
  const off = { origin: false }
  // Synchronous (a two-argument delegator is called back at once): no promise turn per request.
  await app.register(cors, {
    delegator: (request, callback) => callback(null, request.method === 'OPTIONS' && !isPreflight(request) ? off : allowed),
  })
}
