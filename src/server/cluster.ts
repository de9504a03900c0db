// WORKERS=N: N worker processes share one port (node:cluster). The primary migrates, creates the
// first key, forks and supervises the workers, serves their metrics summed on the metrics listener
// (cluster-metrics.ts), and on SIGTERM/SIGINT closes them all gracefully.
import cluster, { type Worker } from 'node:cluster'
import { once } from 'node:events'
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import type { MetricsServer } from '../http/observability/metrics-server.js'
import { createLogger } from '../logger.js'
import { openStore, type Store } from '../store/index.js'
import { createClusterMetrics } from './cluster-metrics.js'
import { startOnDatabase } from './database-wait.js'
import { startMetricsListener } from './metrics-listener.js'

/** Delay (ms) before a worker that died unexpectedly is replaced: bounds a crash loop. */
const RESTART_DELAY_MS = 1000

/**
 * Starts `config.workers` workers (each runs `serve` as a worker) after `prepare` (migrations and the
 * first key) ran once, here, on a store opened for it, and (metrics on) the metrics listener, which
 * answers with every worker's metrics summed. Resolves with where the workers listen once every one
 * does, and the metrics listener; rejects (after stopping the others) if one exits first. `graceMs`
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

  let stopping = false
  const fork = () => cluster.fork()
  let starting = true
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
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'closing: stopping workers')
    const metricsClosed = metrics?.close()
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)
    const exited = Promise.all(workers.map((worker) => (worker.isDead() ? undefined : once(worker, 'exit'))))
    for (const worker of workers) worker.process.kill('SIGTERM')
    const timer = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL')
    }, graceMs)
    await Promise.all([exited, metricsClosed])
    clearTimeout(timer)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)

  const workers = Array.from({ length: config.workers }, fork)
  try {
    const listening = await Promise.all(
      workers.map(
        (worker) =>
          new Promise<{ address: string; port: number }>((resolve, reject) => {
            worker.once('listening', (address) => resolve({ address: address.address ?? config.host, port: address.port }))
            worker.once('exit', (code) => reject(new Error(`a worker exited with code ${code} before it listened`)))
          }),
      ),
    )
    starting = false
    return { ...(listening[0] ?? { address: config.host, port: config.port }), metrics }
  } catch (error) {
    await stop('SIGTERM')
    throw error
  }
}
