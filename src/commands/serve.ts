// `animal-store serve`: config → store → migrate → first key → app → listen (and the metrics
// listener; an unreachable database is waited for: database-wait.ts), and a graceful close on
// SIGTERM/SIGINT (stop accepting, finish in-flight requests, close the database, within 10 s).
// With WORKERS > 1 the primary runs the cluster (cluster.ts) and serves the summed metrics; each
// worker runs the app.
import cluster from 'node:cluster'
import closeWithGrace from 'close-with-grace'
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import type { Registry } from 'prom-client'
import { buildApp } from '../app.js'
import type { Config } from '../config.js'
import { drain } from '../http/connection/shutdown.js'
import { createMetricsRegistry } from '../http/observability/metrics.js'
import { type MetricsServer, registrySource } from '../http/observability/metrics-server.js'
import { createFleetBudgets, type FleetBudgets } from '../http/pipeline/fleet-budget.js'
import { createKeyVerifier, type KeyVerifier } from '../http/pipeline/key-cache.js'
import { IDEMPOTENCY_KEY_TTL_MS } from '../http/routes/idempotency.js'
import { createLogger, stdoutFailures } from '../logger.js'
import { startCluster, workerListenOptions } from '../server/cluster.js'
import { whenNoWorkerListens } from '../server/cluster-listener-close.js'
import { answerMetricsRequests } from '../server/cluster-metrics.js'
import { startOnDatabase } from '../server/database-wait.js'
import { startMetricsListener } from '../server/metrics-listener.js'
import { onStopSignals, type StopSignal } from '../server/stop-signals.js'
import { startIdempotencySweeper } from '../store/idempotency-sweeper.js'
import { openStore, type Store } from '../store/index.js'
import type { Tracing } from '../tracing.js'
import { createFirstKeyIfNone } from './keys.js'

/** How long (ms) a graceful close may take, after SHUTDOWN_DRAIN_MS, before the process is ended anyway. */
export const SHUTDOWN_GRACE_MS = 10_000

/**
 * Runs the service until a signal closes it. Prints the first API key when none existed, the metrics
 * URL (when on) and the listening URL to `out`. `tracing` (src/tracing.ts, started by the caller
 * before this module loaded) traces requests and the store, and is flushed last on close. Rejects
 * (after closing what it opened) if it cannot start.
 */
export async function serve(config: Config, out: NodeJS.WritableStream = process.stdout, tracing?: Tracing): Promise<void> {
  // Migrations and the first key, once per start; the key is shown at once, so a failed listen
  // cannot lose it. How to try it follows the listening line, which has the real port (PORT=0).
  let firstKey: string | undefined
  const prepare = async (store: Store, logger: Logger) => {
    const { applied, newer } = await store.migrate()
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')
    // A rollback, or an instance of the previous release during a rolling deploy: the newer
    // release's migrations must be additive for this to be safe; 0005 is not, and its upgrade is
    // one-way (docs/deploying.md, "Upgrades and rollbacks").
    if (newer.length > 0)
      logger.warn({ migrations: newer }, `database migrated by a newer release (${newer.join(', ')}); serving on it`)
    firstKey = config.apiKeys.length === 0 ? await createFirstKeyIfNone(store.apiKeys) : undefined
    if (firstKey) out.write(firstKeyBanner(firstKey))
  }
  const announce = (address: string, port: number, workers: number, metrics: MetricsServer | undefined) => {
    if (metrics) out.write(metricsLine(metrics))
    out.write(listeningLine(address, port, workers))
    if (firstKey) out.write(`Try it:  curl -H "Authorization: Bearer ${firstKey}" ${baseUrl(address, port)}/pets\n`)
  }
  if (config.workers > 1 && cluster.isPrimary) {
    const { address, port, metrics } = await startCluster(config, config.shutdownDrainMs + SHUTDOWN_GRACE_MS, prepare)
    announce(address, port, config.workers, metrics)
    return
  }
  const listening = await runServer(config, cluster.isWorker ? undefined : prepare, tracing)
  if (listening) announce(listening.address, listening.port, 1, listening.metrics)
}

/**
 * One server process: alone (runs `prepare` first, serves its own metrics), or a cluster worker
 * (`prepare` undefined: the primary ran it and serves every worker's metrics). The graceful close is
 * armed only once listening, so a failed start exits non-zero. Resolves to the listening address
 * (and the metrics listener's), or undefined in a worker (the primary announces).
 */
async function runServer(
  config: Config,
  prepare: ((store: Store, logger: Logger) => Promise<void>) | undefined,
  tracing: Tracing | undefined,
): Promise<{ address: string; port: number; metrics: MetricsServer | undefined } | undefined> {
  const isWorker = prepare === undefined
  const logger = createLogger(config.logLevel, undefined, tracing?.logFields)
  const store = await openServiceStore(config, logger)
  let closeApp = async () => {}
  let rateLimits: FleetBudgets | undefined
  try {
    const { keys, cursorKey } = await startOnDatabase(config, logger, isWorker, async () => {
      await prepare?.(store, logger)
      const cursorKey = await store.loadCursorKey()
      return { cursorKey, keys: await createKeyVerifier(store.apiKeys, config.apiKeys, logger) }
    })
    rateLimits = await openRateLimits(config, logger)
    const registry = metricsRegistry(config, store, keys, rateLimits)
    if (registry && isWorker) answerMetricsRequests(registry)
    // SQLite has no instrumentation of its own: its reads and the writer's round trips get a span here.
    const pets = tracing && store.dialect === 'sqlite' ? tracing.traceStore(store.pets, 'sqlite', 'pets') : store.pets
    const app = await buildApp({
      config,
      store: { ...store, pets },
      keys,
      cursorKey,
      logger,
      metrics: registry && { registry },
      rateLimits,
      tracing: tracing !== undefined,
    })
    tracing?.nameServerSpans(app)
    let metricsServer: MetricsServer | undefined
    const sweeper = startIdempotencySweeper(store.pets, {
      ttlMs: IDEMPOTENCY_KEY_TTL_MS,
      onError: (error) => logger.warn({ err: error }, 'deleting expired Idempotency-Key records failed; trying again later'),
    })
    closeApp = async () => {
      await Promise.all([app.close(), metricsServer?.close(), sweeper.stop()])
      keys.close()
      await rateLimits?.close()
    }
    if (registry && !isWorker) {
      metricsServer = await startMetricsListener(config, registrySource(registry), logger, 'metrics')
    }
    await app.listen({ port: config.port, host: config.host, ...(isWorker ? workerListenOptions() : {}) })
    closeOnSignal(config, logger, app, async () => {
      await closeApp()
      await store.close()
      await tracing?.shutdown()
    })
    return isWorker ? undefined : { ...tcpAddress(app), metrics: metricsServer }
  } catch (error) {
    await closeApp()
    await rateLimits?.close()
    await store.close()
    throw error
  }
}

/**
 * Opens the configured database, with its replicas (DATABASE_REPLICA_URLS) when there are any; its
 * pool's troubles logged as warnings, a replica leaving the rotation as a warning and coming back as info.
 */
function openServiceStore(config: Config, logger: Logger): Promise<Store> {
  const replicas =
    config.databaseReplicaUrls.length > 0
      ? { urls: config.databaseReplicaUrls, waitMs: config.replicaWaitMs, maxLagMs: config.replicaMaxLagMs }
      : undefined
  return openStore(
    config.database,
    {
      poolError: (error) => logger.warn({ err: error }, 'database connection lost'),
      namedStatementsNotKept: () =>
        logger.warn(
          'the pooler in front of PostgreSQL does not keep named statements; reads and creates are parsed and planned at every execution from now on (docs/deploying.md)',
        ),
      replicaChanged: ({ replica, serving, reason }) => {
        if (serving) logger.info({ replica }, 'replica serves reads')
        else logger.warn({ replica, reason }, 'replica out of the rotation: its reads go to the other replicas or the primary')
      },
    },
    replicas,
  )
}

/**
 * The rate limits' shared budgets when RATE_LIMIT_STORE_URL is set, once connected or after a short
 * wait (a store that is down never stops a start: requests are then counted per process). The
 * store's client is loaded only then: a process without one never holds it in memory.
 */
async function openRateLimits(config: Config, logger: Logger): Promise<FleetBudgets | undefined> {
  const url = config.rateLimitStoreUrl
  if (url === undefined) return undefined
  const { inClearOverNetwork, openRateLimitStore, STORE_TIMEOUT_MS } = await import('../store/rate-limit-store.js')
  if (inClearOverNetwork(url)) {
    logger.warn(
      'RATE_LIMIT_STORE_URL is redis:// to a host that is not loopback: its password and every lease cross the network in clear, and anyone on the path can answer them; use rediss:// (docs/deploying.md, "Rate limits on a fleet")',
    )
  }
  const budgets = createFleetBudgets((events) => openRateLimitStore(url, events), logger)
  await budgets.connected(STORE_TIMEOUT_MS * 4)
  return budgets
}

/** The process's metrics registry, reading the store, the key verifier and the rate limits at scrape time; undefined when metrics are off. */
function metricsRegistry(
  config: Config,
  store: Store,
  keys: KeyVerifier,
  rateLimits: FleetBudgets | undefined,
): Registry | undefined {
  if (!config.metricsEnabled) return undefined
  return createMetricsRegistry({
    database: store.dialect,
    poolStats: () => store.poolStats(),
    idempotencyRecordsEvicted: () => store.idempotencyRecordsEvicted(),
    readStats: () => store.readStats(),
    keyReloadFailures: () => keys.reloadFailures,
    logStdoutFailures: stdoutFailures,
    rateLimits,
  })
}

/**
 * Arms the graceful close (close-with-grace): on a stop (stop-signals.ts: SIGTERM, SIGINT, the
 * primary's message) or an uncaught error, drain (SIGTERM only), then `close`; the process is ended
 * anyway after SHUTDOWN_DRAIN_MS + SHUTDOWN_GRACE_MS, and at once (exit 1) by a deliberate later signal.
 */
function closeOnSignal(config: Config, logger: Logger, app: FastifyInstance, close: () => Promise<void>): void {
  let stopSignal: StopSignal | undefined
  let failed = false
  // SIGTERM and SIGINT are left to onStopSignals, which tells a repeat of the stop from an order to end now;
  // close-with-grace's own handles the other signals it knows (SIGHUP, SIGQUIT, …) and crashes.
  const closer = closeWithGrace(
    { delay: config.shutdownDrainMs + SHUTDOWN_GRACE_MS, logger, skip: ['SIGTERM', 'SIGINT'] },
    async ({ err, signal }) => {
      failed = err !== undefined
      // Only SIGTERM (an orchestrator, a balancer's deploy) drains; Ctrl-C and a crash do not wait.
      const drainMs = stopSignal === 'SIGTERM' && !err ? config.shutdownDrainMs : 0
      if (err) logger.error({ err }, 'closing after an unexpected error')
      else logger.info({ signal: stopSignal ?? signal, drainMs }, 'closing: finishing in-flight requests')
      await drain(app, drainMs, whenNoWorkerListens)
      await close()
    },
  )
  onStopSignals(logger, {
    stop: (signal) => {
      // Already closing after an error: a signal then ends the process, as close-with-grace's own would.
      if (failed) {
        logger.warn({ signal }, `${signal} while closing after an error: exiting at once`)
        process.exit(1)
      }
      stopSignal = signal
      closer.close()
    },
    now: () => process.exit(1),
  })
}

/** The address and port the app listens on. */
function tcpAddress(app: FastifyInstance): { address: string; port: number } {
  const address = app.server.address()
  if (typeof address !== 'object' || address === null) throw new Error('the server has no TCP address')
  return { address: address.address, port: address.port }
}

function baseUrl(address: string, port: number): string {
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}/v1`
}

function metricsLine({ address, port }: MetricsServer): string {
  return `Prometheus metrics on http://${address.includes(':') ? `[${address}]` : address}:${port}/metrics\n`
}

function listeningLine(address: string, port: number, workers: number): string {
  const base = baseUrl(address, port)
  const processes = workers > 1 ? ` with ${workers} workers` : ''
  return `Animal Store listening on ${base}${processes} (OpenAPI document: ${base}/openapi.json)\n`
}

function firstKeyBanner(key: string): string {
  const rule = '='.repeat(72)
  return `${rule}
No API key existed, so one was created. Store it now; it is not shown again:

    ${key}

More keys: npx animal-store keys create --name NAME   (see: npx animal-store keys --help)
${rule}
`
}
