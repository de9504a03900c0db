// What every request goes through besides its handler, folded into three steps, each synchronous
// when it can be (every hook that returns a promise costs a microtask turn, docs/benchmarks.md):
// onRequest (the route's fixed headers, the Host check, authentication, the rate limit, the early
// 404/405 and the key's scope), onSend (the request id, closing the connection when needed, lingering after an
// early answer), and onResponse (the one log line and the metrics, handed to request-record.ts).
import type {
  FastifyBaseLogger,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  onResponseHookHandler,
  onRouteHookHandler,
  onSendHookHandler,
} from 'fastify'
import { isKeyScope, KEY_SCOPES, type KeyScope } from '../../key-grants.js'
import { lingerOnClose } from '../connection/lingering-close.js'
import { continueIfExpected, hasUnreadBody, missingHost } from '../connection/protocol.js'
import { ApiError } from '../errors.js'
import type { RequestRecorder } from '../observability/request-record.js'
import { API_HEADERS, API_PREFIX } from './api-headers.js'
import { authenticate, authorize } from './auth.js'
import { clientAddress } from './client-address.js'
import type { KeyIdentity, KeyVerifier } from './key-cache.js'
import type { AuthFailureLimiter, RateLimiter, Refusal } from './rate-limit.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No API key needed (probes, the OpenAPI document, the docs page). */
    public?: boolean
    /** Headers sent on every response of the route, errors included (the API's, getPet's deprecation). */
    headers?: Record<string, string>
    /** The route's request-line logger: its fixed fields (`method`, `route`) serialized once, as pino child bindings. */
    requestLog?: FastifyBaseLogger
    /** The scope a key needs for the route, from its OpenAPI security requirement; undefined: any valid key. */
    scope?: KeyScope
  }
  interface FastifyRequest {
    /** The authenticated key (null on public routes and before authentication). */
    apiKey: KeyIdentity | null
  }
}

/**
 * What the pipeline needs. `notFound` is the 404/405 error for a request no route answers; `limit`
 * counts requests per API key, each against its own rate limit or else `rateLimitPerMinute`
 * (RATE_LIMIT_PER_MINUTE; 0 = none), `limitAuthFailures` failed authentications per client address.
 */
export interface PipelineOptions {
  keys: KeyVerifier
  limit: RateLimiter
  rateLimitPerMinute: number
  limitAuthFailures: AuthFailureLimiter | undefined
  notFound: (request: FastifyRequest) => ApiError
  /** Writes each answered request's log line and metrics (request-record.ts). */
  recorder: RequestRecorder
  logger: FastifyBaseLogger
}

/**
 * Installs the three steps on `app` (before the routes). Authentication runs on every route not marked
 * public, decided on the matched route, never on the raw URL, so no spelling of a path
 * (`http://host/v1/pets`, `/%76%31/pets`) can skip it; unknown paths need a key too, and are then
 * answered 404/405 before any body is read.
 */
export function installRequestPipeline(app: FastifyInstance, options: PipelineOptions): void {
  app.decorateRequest('apiKey', null)
  app.addHook('onRoute', fixRouteParts(options.logger))
  app.addHook('onRequest', admissionStep(options))
  app.addHook('onSend', closingStep(app.shutdown))
  app.addHook('onResponse', recordingStep(options))
  app.addHook('onClose', (_instance, done) => {
    options.recorder.flush()
    done()
  })
}

/**
 * The API's fixed headers join each /v1 route's own fixed headers once, at registration, so the
 * first step sets them with the rest and no request pays for deciding; likewise the fixed fields of
 * the route's log line are serialized once, into a child logger's bindings, and the scope the route
 * needs is read once from its OpenAPI security requirement, so the contract and the check agree.
 */
function fixRouteParts(logger: FastifyBaseLogger): onRouteHookHandler {
  return (route) => {
    const headers = route.url.startsWith(API_PREFIX) ? { ...API_HEADERS, ...route.config?.headers } : route.config?.headers
    const requestLog = typeof route.method === 'string' ? logger.child({ method: route.method, route: route.url }) : undefined
    const scope = requiredScope(route.url, route.schema?.security)
    route.config = { ...route.config, ...(headers && { headers }), ...(requestLog && { requestLog }), ...(scope && { scope }) }
  }
}

/**
 * The scope a route's security requirements (OpenAPI 3.1 §4.8.30: every scope listed is needed) ask
 * of a key: the greatest of them, as each scope includes the ones before it; undefined when they name
 * none. Throws at registration for a scope KEY_SCOPES does not have.
 */
function requiredScope(
  url: string,
  security: ReadonlyArray<Record<string, readonly string[]>> | undefined,
): KeyScope | undefined {
  const named = (security ?? []).flatMap((requirement) => Object.values(requirement).flat())
  const unknown = named.find((scope) => !isKeyScope(scope))
  if (unknown !== undefined)
    throw new Error(`route ${url} needs scope "${unknown}", which is not one of ${KEY_SCOPES.join(', ')}`)
  return KEY_SCOPES.findLast((scope) => named.includes(scope))
}

/**
 * The first step: the route's fixed headers, the Host check, authentication, the rate limit, the
 * early 404/405, the key's scope. A key refused for its scope was authenticated, so it is counted
 * against its rate limit as any request with a valid key is; nothing of the request (body,
 * Idempotency-Key) is read.
 */
function admissionStep({ keys, limit, rateLimitPerMinute, limitAuthFailures, notFound }: PipelineOptions): onRequestHookHandler {
  const proceed = (
    request: FastifyRequest,
    reply: FastifyReply,
    scope: KeyScope | undefined,
    limited: ApiError | undefined,
  ): ApiError | undefined => {
    // No route of ours answers OPTIONS; with CORS on, @fastify/cors routes every OPTIONS to answer
    // preflights, and a plain one that reaches this step gets the same 405/404 as without CORS.
    const unrouted = request.is404 || request.method === 'OPTIONS'
    const refusal = limited ?? (unrouted ? notFound(request) : authorize(request.apiKey as KeyIdentity, scope))
    // RFC 9110 §10.1.1: a client waiting for `100 Continue` sends its body only once it is wanted.
    if (!refusal && request.headers.expect !== undefined) continueIfExpected(request, reply)
    return refusal
  }
  // `scope` is the route's, read with its other config once per request: Fastify builds a new
  // routeOptions object on each read.
  const admit = (request: FastifyRequest, reply: FastifyReply, scope: KeyScope | undefined, identity: KeyIdentity): Refusal => {
    request.apiKey = identity
    const perMinute = identity.rateLimit ?? rateLimitPerMinute
    const limited = perMinute > 0 ? limit(identity.keyId, perMinute, reply) : undefined
    return limited instanceof Promise
      ? limited.then((settled) => proceed(request, reply, scope, settled))
      : proceed(request, reply, scope, limited)
  }

  // A failed authentication is answered 401, or 429 once its address has failed too often this minute.
  const refuse = (request: FastifyRequest, reply: FastifyReply, error: unknown): unknown => {
    if (!(error instanceof ApiError) || error.statusCode !== 401 || !limitAuthFailures) return error
    const limited = limitAuthFailures(clientAddress(request), reply)
    return limited instanceof Promise ? limited.then((settled) => settled ?? error) : (limited ?? error)
  }

  return (request, reply, done) => {
    // Only a limiter that had to ask the shared store answers with a promise (fleet-budget.ts).
    const finish = (outcome: unknown) =>
      outcome instanceof Promise ? outcome.then(done, done) : done(outcome as ApiError | undefined)
    const { config } = request.routeOptions
    if (config.headers) reply.headers(config.headers)
    const hostError = missingHost(request)
    if (hostError || config.public) return done(hostError)
    const identity = authenticate(request.headers.authorization, keys)
    if (identity instanceof ApiError) return finish(refuse(request, reply, identity))
    if (identity instanceof Promise) {
      identity.then(
        (known) => finish(known instanceof ApiError ? refuse(request, reply, known) : admit(request, reply, config.scope, known)),
        (error: unknown) => finish(refuse(request, reply, error)),
      )
    } else {
      finish(admit(request, reply, config.scope, identity))
    }
  }
}

/**
 * Close the connection when answering before a declared body was read (401, 404, 405, 413, 415,
 * 429, a public route): reading and discarding all of it would let a client without a key push
 * any amount. The close lingers, bounded (lingering-close.ts), so that the answer is not lost to a
 * reset, except after a GET or HEAD to a public route (bodilessPublic). Once closing (shutdown.ts), every response asks its keep-alive client to reconnect
 * (elsewhere): an idle kept-alive socket would otherwise hold the close open until the grace period
 * kills the process. The request id goes on here rather than in the first step, so that responses
 * written before it (a CORS preflight, answered by @fastify/cors ahead of authentication) carry it too.
 */
function closingStep(shutdown: FastifyInstance['shutdown']): onSendHookHandler {
  return (request, reply, payload, done) => {
    reply.header('x-request-id', request.id)
    if (hasUnreadBody(request)) {
      reply.header('connection', 'close')
      if (!bodilessPublic(request)) lingerOnClose(request.raw.socket)
    } else if (shutdown.closing) reply.header('connection', 'close')
    done(null, payload)
  }
}

/**
 * A GET or HEAD to a public route: content in such a request has no meaning (RFC 9110 §9.3.1, §9.3.2)
 * and no key vouches for its sender, so a declared body gets no lingering close, only Node's plain
 * close once the answer is written; lingering there would let anyone hold a connection for LINGER_MS
 * with a header.
 */
function bodilessPublic(request: FastifyRequest): boolean {
  return request.routeOptions.config.public === true && (request.method === 'GET' || request.method === 'HEAD')
}

/** The last step: each answered request's log line and metrics, handed to the recorder. */
function recordingStep({ recorder, logger }: PipelineOptions): onResponseHookHandler {
  return (request, reply, done) => {
    const { config, schema, url } = request.routeOptions
    const status = reply.statusCode
    const durationMs = reply.elapsedTime
    const { method } = request
    const line = {
      reqId: request.id,
      status,
      durationMs: Math.round(durationMs * 100) / 100,
      client: clientAddress(request),
      keyId: request.apiKey?.keyId ?? null,
    }
    recorder.record({
      // Requests no route answers (404, 405) have no route logger: their method and path are per request.
      log: config.requestLog ?? logger,
      fields: config.requestLog ? line : { method, route: url ?? null, ...line },
      // label `operation`: the operationId, else the route path, else `not_found`
      operation: (schema as { operationId?: string } | undefined)?.operationId ?? url ?? 'not_found',
      method,
      status,
      durationMs,
    })
    done()
  }
}
