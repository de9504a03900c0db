// buildApp(): the Fastify application with every route, hook and handler, ready for inject() or
// listen(). It never listens and has no side effects beyond the objects passed in.
import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyBaseLogger, type FastifyInstance, type FastifyRequest, LogController } from 'fastify'
import type { Registry } from 'prom-client'
import type { Config } from './config.js'
import { capConnections } from './http/connection/connection-cap.js'
import { installProtocolHandling, PROTOCOL_SERVER_OPTIONS } from './http/connection/protocol.js'
import { installShutdownState } from './http/connection/shutdown.js'
import { SERVER_TIMEOUTS } from './http/connection/timeouts.js'
import { ApiError, ErrorBody, ErrorDetail, handleClientError, handleError } from './http/errors.js'
import { createRequestMetrics, observeConnections } from './http/observability/metrics.js'
import { createRequestRecorder } from './http/observability/request-record.js'
import { createUnavailableLog } from './http/observability/unavailable-log.js'
import { authenticate } from './http/pipeline/auth.js'
import { registerCompression } from './http/pipeline/compression.js'
import { createPetTags } from './http/pipeline/conditional-requests.js'
import { registerCors } from './http/pipeline/cors.js'
import type { FleetBudgets } from './http/pipeline/fleet-budget.js'
import { parseJsonBody } from './http/pipeline/json-body.js'
import type { KeyVerifier } from './http/pipeline/key-cache.js'
import { installNotFoundHandler } from './http/pipeline/not-found.js'
import { createAuthFailureLimiter, createRateLimiter } from './http/pipeline/rate-limit.js'
import { requestIdFrom } from './http/pipeline/request-id.js'
import { installRequestPipeline } from './http/pipeline/request-pipeline.js'
import { buildValidatorCompiler } from './http/pipeline/validation.js'
import { createConsistencyTokens } from './http/routes/consistency-token.js'
import { type CursorCodec, createCursorCodec } from './http/routes/cursor.js'
import { healthRoutes } from './http/routes/health.js'
import { openApiServers, registerOpenApi } from './http/routes/openapi.js'
import { cachingFindPet } from './http/routes/pet-cache.js'
import { petRoutes } from './http/routes/pets.js'
import { BODY_LIMIT_BYTES, Pet, RESOURCE_SCHEMAS } from './schemas.js'
import type { Store } from './store/index.js'

/**
 * What buildApp needs: the validated config, an open store, a key verifier, the key that signs
 * listPets cursors and consistency tokens (`store.loadCursorKey()`: the database's, so every instance shares it), a pino
 * logger, and `metrics` (a registry from createMetricsRegistry) when responses are to be counted.
 */
export interface AppDependencies {
  config: Pick<
    Config,
    | 'publicUrl'
    | 'rateLimitPerMinute'
    | 'authFailuresPerMinute'
    | 'maxConnections'
    | 'corsOrigins'
    | 'trustProxy'
    | 'idempotencyRecordsPerKey'
  > &
    Partial<Pick<Config, 'host' | 'port'>>
  store: Pick<Store, 'pets' | 'ping' | 'answering'>
  keys: KeyVerifier
  cursorKey: Buffer
  logger: FastifyBaseLogger
  metrics?: { registry: Registry }
  /** The rate limits' shared budgets (RATE_LIMIT_STORE_URL); without them each process counts on its own. */
  rateLimits?: FleetBudgets
  /** The interval (ms) identical 503s are counted over in the log; UNAVAILABLE_LOG_INTERVAL_MS unless given. */
  unavailableLogIntervalMs?: number
  /** OpenTelemetry tracing is on (src/tracing.ts): each request line is then written in its request's span, whose ids it carries. */
  tracing?: boolean
}

/** Builds the app; await `app.ready()` (or listen) before use. */
export async function buildApp({
  config,
  store,
  keys,
  cursorKey,
  logger,
  metrics,
  rateLimits,
  unavailableLogIntervalMs,
  tracing = false,
}: AppDependencies): Promise<FastifyInstance> {
  const app = createFastify(config, keys, logger)
  installProtocolHandling(app)
  installShutdownState(app)
  installUnavailableLog(app, logger, unavailableLogIntervalMs)
  // Past this many open connections the longest-idle one makes room (or, when none is idle, the new
  // one is closed at once): a flood of sockets can neither exhaust file descriptors or memory nor
  // lock keyed clients out.
  capConnections(app.server, config.maxConnections)
  if (metrics) observeConnections(metrics.registry, app.server, config.maxConnections)
  const cursors = createCursorCodec(cursorKey)
  const tags = createPetTags(cursorKey, JSON.stringify(Pet))
  installBodyHandling(app, cursors)
  if (config.corsOrigins.length > 0) await registerCors(app, config.corsOrigins)
  installRequestPipeline(app, {
    keys,
    limit: createRateLimiter(rateLimits?.counter()),
    rateLimitPerMinute: config.rateLimitPerMinute,
    // Per process even with the shared store: the limit guards each process's hashing, and counters
    // per client address in the store would let a client with many addresses fill it.
    limitAuthFailures: config.authFailuresPerMinute > 0 ? createAuthFailureLimiter(config.authFailuresPerMinute) : undefined,
    notFound: installNotFoundHandler(app),
    recorder: createRequestRecorder(metrics && createRequestMetrics(metrics.registry), { atOnce: tracing }),
    logger,
  })
  await registerCompression(app)

  const linkBase = config.publicUrl ?? '/v1'
  await registerOpenApi(app, openApiServers(config))
  await app.register(petRoutes, {
    // A kept pet is served while the database answers, so that an outage answers 503 as before.
    pets: { ...store.pets, findPet: cachingFindPet(store.pets.findPet, () => store.answering()) },
    linkBase,
    cursors,
    tags,
    tokens: createConsistencyTokens(cursorKey),
    idempotencyRecordsPerKey: config.idempotencyRecordsPerKey,
  })
  await app.register(healthRoutes, { ping: () => store.ping() })
  await app.register(import('./http/routes/docs-page.js'))
  return app
}

/** The Fastify instance with the server's options: logging, limits, timeouts, proxies, request ids, early errors. */
function createFastify(config: AppDependencies['config'], keys: KeyVerifier, logger: FastifyBaseLogger): FastifyInstance {
  return Fastify({
    loggerInstance: logger,
    // One line per request, written by the request pipeline, instead of Fastify's two; and no
    // child logger per request (log lines carry `reqId` themselves).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (parent) => parent,
    // While closing, answer in-flight keep-alive requests normally rather than with a non-Error body.
    return503OnClosing: false,
    bodyLimit: BODY_LIMIT_BYTES,
    requestTimeout: SERVER_TIMEOUTS.requestTimeout,
    connectionTimeout: SERVER_TIMEOUTS.connectionTimeout,
    keepAliveTimeout: SERVER_TIMEOUTS.keepAliveTimeout,
    http: {
      headersTimeout: SERVER_TIMEOUTS.headersTimeout,
      connectionsCheckingInterval: SERVER_TIMEOUTS.connectionsCheckingInterval,
      ...PROTOCOL_SERVER_OPTIONS,
    },
    // `request.ip` (the log line's `client`, the auth-failure limit's address) is the client named by
    // X-Forwarded-For only when the connection comes from a proxy listed in TRUST_PROXY.
    trustProxy: config.trustProxy.length > 0 ? [...config.trustProxy] : false,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id']) ?? randomUUID(),
    // A URL the router cannot even decode still needs a key first: 401 before the 400.
    frameworkErrors: (error, request, reply) => {
      Promise.resolve()
        .then(() => authenticate(request.headers.authorization, keys))
        .then(
          (identity) => handleError(identity instanceof ApiError ? identity : error, request, reply),
          (authError: ApiError) => handleError(authError, request, reply),
        )
    },
    clientErrorHandler: handleClientError,
    // A petId longer than this is not routed at all; 500 characters lets every wrong one reach
    // validation (a 400 naming petId, after authentication) instead.
    routerOptions: { maxParamLength: 500 },
  })
}

/** The log of identical 503s (unavailable-log.ts) as `app.unavailableLog`, its last count written at close. */
function installUnavailableLog(app: FastifyInstance, logger: FastifyBaseLogger, intervalMs: number | undefined): void {
  const unavailableLog = createUnavailableLog(logger, intervalMs)
  app.decorate('unavailableLog', unavailableLog)
  app.addHook('onClose', (_instance, done) => {
    unavailableLog.flush()
    done()
  })
}

/** The shared schemas, the validator (int64-exact, cursors), the one JSON body parser and the error handler. */
function installBodyHandling(app: FastifyInstance, cursors: CursorCodec): void {
  const schemas = [...RESOURCE_SCHEMAS, ErrorDetail, ErrorBody]
  for (const schema of schemas) app.addSchema(schema)
  app.setValidatorCompiler(buildValidatorCompiler(schemas, cursors))
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, async (request: FastifyRequest, body: Buffer) =>
    parseJsonBody(request, body),
  )
  app.setErrorHandler(handleError)
}
