// buildApp(): the Fastify application with every route, hook and handler, ready for inject() or
// listen(). It never listens and has no side effects beyond the objects passed in.
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from 'fastify'
import type { Registry } from 'prom-client'
import type { Config } from './config.js'
import { authenticate, type KeyVerifier } from './http/auth.js'
import { ApiError, ErrorBody, ErrorDetail, handleClientError, handleError } from './http/errors.js'
import { healthRoutes } from './http/health.js'
import { parseJsonBody } from './http/json-body.js'
import { installMetrics } from './http/metrics.js'
import { installNotFoundHandler } from './http/not-found.js'
import { registerOpenApi } from './http/openapi.js'
import { petRoutes } from './http/pets.js'
import { createRateLimiter } from './http/rate-limit.js'
import { SERVER_TIMEOUTS } from './http/timeouts.js'
import { buildValidatorCompiler } from './http/validation.js'
import { BODY_LIMIT_BYTES, RESOURCE_SCHEMAS } from './schemas.js'
import type { Store } from './store/index.js'

/**
 * What buildApp needs: the validated config, an open store, a key verifier and a pino logger;
 * `metrics` (a registry from createMetricsRegistry) when responses are to be counted.
 */
export interface AppDependencies {
  config: Pick<Config, 'publicUrl' | 'rateLimitPerMinute'>
  store: Pick<Store, 'pets' | 'ping'>
  keys: KeyVerifier
  logger: FastifyBaseLogger
  metrics?: { registry: Registry }
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** No API key needed (probes, the OpenAPI document). */
    public?: boolean
  }
}

/** Builds the app; await `app.ready()` (or listen) before use. */
export async function buildApp({ config, store, keys, logger, metrics }: AppDependencies): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    // One line per request, written by the onResponse hook below, instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // While closing, answer in-flight keep-alive requests normally rather than with a non-Error body.
    return503OnClosing: false,
    bodyLimit: BODY_LIMIT_BYTES,
    requestTimeout: SERVER_TIMEOUTS.requestTimeout,
    connectionTimeout: SERVER_TIMEOUTS.connectionTimeout,
    keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeout,
    http: {
      headersTimeout: SERVER_TIMEOUTS.headersTimeout,
      connectionsCheckingInterval: SERVER_TIMEOUTS.connectionsCheckingInterval,
      // Node would answer an HTTP/1.1 request without Host with a bare 400; the onRequest hook
      // answers it with the Error body instead.
      requireHostHeader: false,
    },
    genReqId: () => randomUUID(),
    // A URL the router cannot even decode still needs a key first: 401 before the 400.
    frameworkErrors: (error, request, reply) => {
      authenticate(request, keys).then(
        () => handleError(error, request, reply),
        (authError: ApiError) => handleError(authError, request, reply),
      )
    },
    clientErrorHandler: handleClientError,
    // A petId longer than this is not routed at all; 500 characters lets every wrong one reach
    // validation (a 400 naming petId, after authentication) instead.
    routerOptions: { maxParamLength: 500 },
  })
  const schemas = [...RESOURCE_SCHEMAS, ErrorDetail, ErrorBody]
  for (const schema of schemas) app.addSchema(schema)
  app.setValidatorCompiler(buildValidatorCompiler(schemas))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (request: FastifyRequest, body: Buffer) =>
    parseJsonBody(request, body),
  )
  app.setErrorHandler(handleError)
  const notFound = installNotFoundHandler(app)

  const limit = config.rateLimitPerMinute > 0 ? await createRateLimiter(app, config.rateLimitPerMinute) : undefined
  // Every request needs a key unless its route is public (probes, metrics, the OpenAPI document):
  // deciding on the matched route, never on the raw URL, so no spelling of a path
  // (`http://host/v1/pets`, `/%76%31/pets`) can skip it; unknown paths need one too.
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    if (request.raw.httpVersion === '1.1' && request.headers.host === undefined) {
      throw new ApiError('invalid_request', { message: 'An HTTP/1.1 request needs a Host header (RFC 9112 §3.2).', details: [] })
    }
    if (request.routeOptions.config.public) return
    const keyHash = await authenticate(request, keys)
    await limit?.(request, reply, keyHash)
    if (request.is404) throw notFound(request) // answered before any body is read
  })
  // Once closing, every response asks its keep-alive client to reconnect (elsewhere): an idle
  // kept-alive socket would otherwise hold the close open until the grace period kills the process.
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  app.addHook('onSend', async (_request, reply, payload) => {
    if (closing) reply.header('connection', 'close')
    return payload
  })
  app.addHook('onResponse', async (request, reply) => {
    request.log.info(
      {
        method: request.method,
        route: request.routeOptions.url ?? null,
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 100) / 100,
      },
      'request',
    )
  })

  // Node answers an `Expect` other than 100-continue with a bare 417 of its own; RFC 9110 §10.1.1
  // allows ignoring it, so the request is served like any other.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response))
  // A client that half-closes after its request (shutdown(SHUT_WR)) still gets its answer, instead
  // of Node closing the socket before an asynchronous handler can respond.
  const server: typeof app.server & { httpAllowHalfOpen?: boolean } = app.server
  server.httpAllowHalfOpen = true

  if (metrics) installMetrics(app, metrics.registry)

  const linkBase = config.publicUrl ?? '/v1'
  await registerOpenApi(app, linkBase)
  await app.register(petRoutes, { pets: store.pets, linkBase })
  await app.register(healthRoutes, { ping: () => store.ping() })
  return app
}
