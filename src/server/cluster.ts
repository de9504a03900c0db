// WORKERS=N: N worker processes share one port (node:cluster). The primary migrates, creates the
// first key, forks and supervises the workers, serves their metrics summed on the metrics listener
// (cluster-metrics.ts), and on SIGTERM/SIGINT closes them all gracefully (stop-signals.ts).
import cluster, { type Address, type Worker } from 'node:cluster'
import { once } from 'node:events'
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
  const clusterMetrics = config.metricsEnabled ? createClusterMetrics() : undefined
  const metrics = clusterMetrics
    ? await startMetricsListener(config, clusterMetrics.source, logger, 'metrics of the workers')
    : undefined
  const stops = watchWorkerStops()
  const supervisor = superviseWorkers(logger, graceMs, stops, clusterMetrics, metrics)
  const workers = Array.from({ length: config.workers }, () => cluster.fork())
  try {
    const listening = await Promise.all(workers.map((worker) => whenServing(worker, config.host, stops)))
    supervisor.started()
    return { ...(listening[0] ?? { address: config.host, port: config.port }), metrics }
  } catch (error) {
    await supervisor.stop('SIGTERM')
    throw error
  }
}

/** What startCluster does with its workers once forked: end the start, or stop them all. */
interface Supervisor {
  /** Every worker listens: from now on one that exits is replaced. */
  started(): void
  /** Stops the workers (SIGTERM's or SIGINT's stop, SIGKILL after the grace period) and the metrics listener; once. */
  stop(signal: StopSignal): Promise<void>
}

/**
 * Watches the workers: one that exits after the start is replaced after RESTART_DELAY_MS (a worker
 * failing at start fails the start instead, not a loop). SIGTERM and SIGINT stop them all (each
 * worker is told once, however the signal came: stop-signals.ts), killing those still running
 * after `graceMs`; a deliberate later signal ends them at once, and the primary then exits 1.
 */
function superviseWorkers(
  logger: Logger,
  graceMs: number,
  stops: WorkerStops,
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
      if (!stopping) cluster.fork()
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
 * Where `worker` listens (`host` when it reports no address), once it does and takes its stop as a
 * message; rejects if it exits first. Its port opens a moment before its graceful close is armed, and
 * a stop passed on in that moment would be a SIGTERM that ends it without a drain: the start is
 * announced, and a stop can come, only after both.
 */
function whenServing(worker: Worker, host: string, stops: WorkerStops): Promise<{ address: string; port: number }> {
  return new Promise((resolve, reject) => {
    worker.once('exit', (code) => reject(new Error(`a worker exited with code ${code} before it listened`)))
    const listening = once(worker, 'listening') as Promise<[Address]>
    Promise.all([listening, stops.taking(worker)]).then(([[address]]) => {
      resolve({ address: address.address ?? host, port: address.port })
    }, reject)
  })
}
