// buildApp(): the Fastify application with every route, hook and handler, ready for inject() or
// listen(). It never listens and has no side effects beyond the objects passed in.
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from 'fastify'
import type { Registry } from 'prom-client'
import type { Config } from './config.js'
import { authenticate, type KeyVerifier } from './http/auth.js'
import { ErrorBody, ErrorDetail, handleError } from './http/errors.js'
import { healthRoutes } from './http/health.js'
import { parseJsonBody } from './http/json-body.js'
import { installMetrics, type MetricsSource } from './http/metrics.js'
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
 * `metrics` (a registry from createMetricsRegistry, and optionally where to read the text from in a
 * cluster) when GET /metrics is to be served.
 */
export interface AppDependencies {
  config: Pick<Config, 'publicUrl' | 'rateLimitPerMinute'>
  store: Pick<Store, 'pets' | 'ping'>
  keys: KeyVerifier
  logger: FastifyBaseLogger
  metrics?: { registry: Registry; source?: MetricsSource }
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
    },
    genReqId: () => randomUUID(),
    frameworkErrors: (error, _request, reply) => handleError(error, reply.request, reply),
  })
  const schemas = [...RESOURCE_SCHEMAS, ErrorDetail, ErrorBody]
  for (const schema of schemas) app.addSchema(schema)
  app.setValidatorCompiler(buildValidatorCompiler(schemas))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (request: FastifyRequest, body: Buffer) =>
    parseJsonBody(request, body),
  )
  app.setErrorHandler(handleError)
  installNotFoundHandler(app)

  const limit = config.rateLimitPerMinute > 0 ? await createRateLimiter(app, config.rateLimitPerMinute) : undefined
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
    const path = request.url.split('?', 1)[0] ?? ''
    const underV1 = path === '/v1' || path.startsWith('/v1/')
    if (!underV1 || request.routeOptions.config.public) return
    const keyHash = await authenticate(request, keys)
    await limit?.(request, reply, keyHash)
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

  if (metrics) installMetrics(app, metrics.registry, metrics.source)

  const linkBase = config.publicUrl ?? '/v1'
  await registerOpenApi(app, linkBase)
  await app.register(petRoutes, { pets: store.pets, linkBase })
  await app.register(healthRoutes, { ping: () => store.ping() })
  return app
}
