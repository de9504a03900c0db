// WORKERS=N: N worker processes share one port (node:cluster). The primary migrates, creates the
// first key, forks and supervises the workers, sums their metrics for GET /metrics, and on
// SIGTERM/SIGINT closes them all gracefully.
import cluster, { type Worker } from 'node:cluster'
import { once } from 'node:events'
import type { Logger } from 'pino'
import { AggregatorRegistry, type Registry } from 'prom-client'
import type { Config } from '../config.js'
import type { MetricsSource } from '../http/metrics.js'
import { createLogger } from '../logger.js'
import { openStore, type Store } from '../store/index.js'

const METRICS_REQUEST = 'animal-store:metrics-request'
const METRICS_RESPONSE = 'animal-store:metrics-response'
/** Delay (ms) before a worker that died unexpectedly is replaced: bounds a crash loop. */
const RESTART_DELAY_MS = 1000

/**
 * Starts `config.workers` workers (each runs `serve` as a worker) after `prepare` (migrations and the
 * first key) ran once, here, on a store opened for it. Resolves with where the workers listen once
 * every one does; rejects (after stopping the others) if one exits first. `graceMs` bounds the close
 * on a signal, after which remaining workers are killed.
 */
export async function startCluster(
  config: Config,
  graceMs: number,
  prepare: (store: Store, logger: Logger) => Promise<void>,
): Promise<{ address: string; port: number }> {
  const logger = createLogger(config.logLevel)
  const store = openStore(config.database)
  try {
    await prepare(store, logger)
  } finally {
    await store.close()
  }
  if (config.metricsEnabled) answerMetricsRequests()

  let stopping = false
  const fork = () => cluster.fork()
  let starting = true
  cluster.on('exit', (worker, code, signal) => {
    if (stopping || starting) return // a worker failing at start fails the start (below), not a loop
    logger.error({ workerId: worker.id, code, signal }, `worker exited; replacing it in ${RESTART_DELAY_MS} ms`)
    setTimeout(() => {
      if (!stopping) fork()
    }, RESTART_DELAY_MS).unref()
  })
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return
    stopping = true
    logger.info({ signal }, 'closing: stopping workers')
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)
    const exited = Promise.all(workers.map((worker) => (worker.isDead() ? undefined : once(worker, 'exit'))))
    for (const worker of workers) worker.process.kill('SIGTERM')
    const timer = setTimeout(() => {
      for (const worker of workers) if (!worker.isDead()) worker.process.kill('SIGKILL')
    }, graceMs)
    await exited
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
    return listening[0] ?? { address: config.host, port: config.port }
  } catch (error) {
    await stop('SIGTERM')
    throw error
  }
}

/** Primary side: answers a worker's request for the summed metrics of every worker. */
function answerMetricsRequests(): void {
  const aggregator = new AggregatorRegistry()
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== METRICS_REQUEST) return
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: METRICS_RESPONSE, id: message.id, text, contentType: aggregator.contentType }),
      (error: Error) => worker.send({ type: METRICS_RESPONSE, id: message.id, error: error.message }),
    )
  })
}

/**
 * Worker side: makes `registry` what the primary collects, and returns the MetricsSource that asks
 * the primary for every worker's metrics, summed (rejects after 5 s without an answer).
 */
export function clusterMetricsSource(registry: Registry): MetricsSource {
  new AggregatorRegistry() // installs prom-client's worker-side listener
  AggregatorRegistry.setRegistries([registry])
  let nextId = 0
  return () =>
    new Promise((resolve, reject) => {
      const id = nextId++
      const onMessage = (message: { type?: string; id?: number; text?: string; contentType?: string; error?: string }) => {
        if (message?.type !== METRICS_RESPONSE || message.id !== id) return
        process.off('message', onMessage)
        clearTimeout(timer)
        if (message.error !== undefined) reject(new Error(message.error))
        else resolve({ text: message.text ?? '', contentType: message.contentType ?? registry.contentType })
      }
      const timer = setTimeout(() => {
        process.off('message', onMessage)
        reject(new Error('the primary did not answer the metrics request'))
      }, 5000)
      process.on('message', onMessage)
      process.send?.({ type: METRICS_REQUEST, id })
    })
}
