// WORKERS=N: N worker processes share one port (node:cluster forks them; each listens on a socket of
// its own where it can: workerListenOptions). The primary migrates, creates the first key, checks the
// port, forks and supervises the workers, serves their metrics summed on the metrics listener
// (cluster-metrics.ts), and on SIGTERM/SIGINT closes them all gracefully (stop-signals.ts).
import cluster, { type Worker } from 'node:cluster'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { MetricsServer } from '../http/observability/metrics-server.js'
import { createLogger } from '../logger.js'
import { openStore, type Store } from '../store/index.js'
import { coordinateListenerClose } from './cluster-listener-close.js'
import { type ClusterMetrics, createClusterMetrics } from './cluster-metrics.js'
import { startOnDatabase } from './database-wait.js'
import { startMetricsListener } from './metrics-listener.js'
import { onStopSignals, type StopSignal, type WorkerStops, watchWorkerStops } from './stop-signals.js'

/** Delay (ms) before a worker that died unexpectedly is replaced: bounds a crash loop. */
const RESTART_DELAY_MS = 1000

/** Where the kernel spreads a port's new connections over its SO_REUSEPORT sockets, as libuv asks. */
const REUSE_PORT_PLATFORMS = new Set<string>(['linux', 'freebsd'])

/**
 * How a worker listens: where Node (22.12+, 23.1+) and the system can, on a socket of its own
 * (`exclusive`, not node:cluster's one socket in the primary) in the port's SO_REUSEPORT group, the
 * kernel spreading new connections over the workers still listening; elsewhere (`{}`) on
 * node:cluster's socket, which the primary accepts on and hands each connection to a worker. With
 * its own socket, a worker closing it at the end of its drain resets only what reached it in that
 * instant, as a single process does; through the primary, what the primary had accepted for a worker
 * that was closing is reset once the last one stops listening, and a balancer's request on it lost (a
 * POST gets 503 from nginx). `platform` is a process.platform, `version` a process.versions.node.
 */
export function workerListenOptions(
  platform: string = process.platform,
  version: string = process.versions.node,
): { exclusive?: true; reusePort?: true } {
  const [major = 0, minor = 0] = version.split('.').map(Number)
  const nodeHasReusePort = major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12)
  return REUSE_PORT_PLATFORMS.has(platform) && nodeHasReusePort ? { exclusive: true, reusePort: true } : {}
}

/**
 * Starts `config.workers` workers (each runs `serve` as a worker) after `prepare` (migrations and the
 * first key) ran once, here, on a store opened for it, and (metrics on) the metrics listener, which
 * answers with every worker's metrics summed. Resolves with where the workers listen once every one
 * does and has armed its graceful close, and the metrics listener; rejects (after stopping the others) if one exits first. `graceMs`
 * bounds the close on a signal, after which remaining workers are killed.
 */
export async function startCluster(
  config: Config,
  graceMs: number,
  prepare: (store: Store, logger: Logger) => Promise<void>,
): Promise<{ address: string; port: number; metrics: MetricsServer | undefined }> {
  const logger = createLogger(config.logLevel)
  const store = await openStore(config.database)
  try {
    await startOnDatabase(config, logger, false, () => prepare(store, logger))
  } finally {
    await store.close()
  }
  const listener = await probePort(config.host, config.port)
  const clusterMetrics = config.metricsEnabled ? createClusterMetrics() : undefined
  const metrics = clusterMetrics
    ? await startMetricsListener(config, clusterMetrics.source, logger, 'metrics of the workers')
    : undefined
  // Every worker, a replacement too, listens on the port probed (the system's pick for PORT=0).
  const fork = () => cluster.fork({ PORT: String(listener.port) })
  const stops = watchWorkerStops()
  const supervisor = superviseWorkers(logger, graceMs, stops, fork, clusterMetrics, metrics)
  const workers = Array.from({ length: config.workers }, fork)
  try {
    await Promise.all(workers.map((worker) => whenServing(worker, stops)))
    supervisor.started()
    return { ...listener, metrics }
  } catch (error) {
    await supervisor.stop('SIGTERM')
    throw error
  }
}

/**
 * Listens on `host`:`port` without SO_REUSEPORT and closes at once; resolves to the address and port
 * (the system's pick for port 0). Rejects with the listen error: EADDRINUSE when a process listens
 * there, which the workers' SO_REUSEPORT sockets would not meet if it is another instance's (they
 * would join its group and share its clients). A check, not a lock: the port is free again until the
 * workers listen, about a second.
 */
async function probePort(host: string, port: number): Promise<{ address: string; port: number }> {
  const probe = createServer()
  probe.listen({ host, port })
  await once(probe, 'listening')
  const address = probe.address()
  await new Promise((resolve) => probe.close(resolve))
  if (typeof address !== 'object' || address === null) throw new Error('the port probed has no TCP address')
  return { address: address.address, port: address.port }
}

/** What startCluster does with its workers once forked: end the start, or stop them all. */
interface Supervisor {
  /** Every worker listens: from now on one that exits is replaced. */
  started(): void
  /** Stops the workers (SIGTERM's or SIGINT's stop, SIGKILL after the grace period) and the metrics listener; once. */
  stop(signal: StopSignal): Promise<void>
}

/**
 * Watches the workers: one that exits after the start is replaced by `fork` after RESTART_DELAY_MS
 * (a worker failing at start fails the start instead, not a loop). SIGTERM and SIGINT stop them all
 * (each worker is told once, however the signal came: stop-signals.ts), killing those still running
 * after `graceMs`; a deliberate later signal ends them at once, and the primary then exits 1.
 */
function superviseWorkers(
  logger: Logger,
  graceMs: number,
  stops: WorkerStops,
  fork: () => Worker,
  clusterMetrics: ClusterMetrics | undefined,
  metrics: MetricsServer | undefined,
): Supervisor {
  let stopping: Promise<void> | undefined
  let starting = true
  coordinateListenerClose()
  const workers = () => Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)
  cluster.on('exit', (worker, code, signal) => {
    clusterMetrics
      ?.workerExited(worker)
      .catch((error: unknown) => logger.error({ err: error }, 'keeping the metrics of an exited worker failed'))
    if (stopping || starting) return // a worker failing at start fails the start (below), not a loop
    logger.error({ workerId: worker.id, code, signal }, `worker exited; replacing it in ${RESTART_DELAY_MS} ms`)
    clusterMetrics?.workerReplaced()
    setTimeout(() => {
      if (!stopping) fork()
    }, RESTART_DELAY_MS).unref()
  })
  const stop = (signal: StopSignal) => {
    stopping ??= (async () => {
      logger.info({ signal }, 'closing: stopping workers')
      const metricsClosed = metrics?.close()
      const running = workers()
      const exited = Promise.all(running.map((worker) => (worker.isDead() ? undefined : once(worker, 'exit'))))
      for (const worker of running) stops.pass(worker, signal, false)
      const timer = setTimeout(() => {
        for (const worker of running) if (!worker.isDead()) worker.process.kill('SIGKILL')
      }, graceMs)
      await Promise.all([exited, metricsClosed])
      clearTimeout(timer)
    })()
    return stopping
  }
  onStopSignals(logger, {
    stop: (signal) => void stop(signal),
    now: (signal) => {
      for (const worker of workers()) stops.pass(worker, signal, true)
      // The stop was cut short: the primary exits once the workers have (stop() still awaits them).
      process.exitCode = 1
    },
  })
  return {
    started: () => {
      starting = false
    },
    stop,
  }
}

/**
 * Resolves once `worker` listens and takes its stop as a message (it arms its graceful close once
 * listening, and says so then: stop-signals.ts); rejects if it exits first. A stop passed on before
 * that would be a SIGTERM that ends it without a drain: the start is announced, and a stop can come,
 * only after.
 */
function whenServing(worker: Worker, stops: WorkerStops): Promise<void> {
  return new Promise((resolve, reject) => {
    worker.once('exit', (code) => reject(new Error(`a worker exited with code ${code} before it listened`)))
    stops.taking(worker).then(resolve, reject)
  })
}
