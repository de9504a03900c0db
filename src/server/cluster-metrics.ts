// WORKERS=N: the primary's GET /metrics. Every live worker's registry, asked over the cluster's IPC
// channel, summed with the counters and histograms of workers that have exited (their last figures),
// so that a total never goes down when a worker is replaced; plus the primary's own metrics.
import cluster, { type Worker } from 'node:cluster'
import { randomUUID } from 'node:crypto'
import { AggregatorRegistry, Counter, type MetricObjectWithValues, type MetricValue, Registry } from 'prom-client'
import type { MetricsSource } from '../http/observability/metrics-server.js'

const REQUEST = 'animal-store:metrics-request'
const RESPONSE = 'animal-store:metrics-response'
/** How long (ms) a scrape waits for a worker; past it, the worker's last figures stand in. */
const WORKER_ANSWER_MS = 2_000

/** Metric types whose totals only grow (prom-client's MetricType values; the enum is a type only). */
const CUMULATIVE = new Set(['counter', 'histogram'])

/** The primary's own counter of replaced workers (only under WORKERS > 1). */
export const WORKER_RESTARTS_METRIC = 'animal_store_worker_restarts_total'

type Snapshot = MetricObjectWithValues<MetricValue<string>>[]

interface MetricsResponse {
  type: typeof RESPONSE
  id: string
  metrics: Snapshot
}

/** The primary's side: the /metrics source, and what the cluster tells it about its workers. */
export interface ClusterMetrics {
  readonly source: MetricsSource
  /** A worker exited: its counters and histograms are kept at their last figures. */
  workerExited(worker: Worker): Promise<void>
  /** A worker that died is being replaced (`animal_store_worker_restarts_total`). */
  workerReplaced(): void
}

/**
 * Starts collecting for the primary. Counters of the primary itself: `animal_store_worker_restarts_total`.
 * Gauges of an exited worker are dropped (they described a process that is gone).
 */
export function createClusterMetrics(): ClusterMetrics {
  const own = new Registry()
  const restarts = new Counter({
    name: WORKER_RESTARTS_METRIC,
    help: 'Worker processes that died and were replaced (WORKERS > 1).',
    registers: [own],
  })
  restarts.inc(0)
  const latest = new Map<number, Snapshot>() // by worker id: its last answer
  let retired: Snapshot = [] // exited workers' counters and histograms, summed
  const waiting = new Map<string, (metrics: Snapshot) => void>()
  cluster.on('message', (_worker, message: MetricsResponse) => {
    if (message?.type === RESPONSE) waiting.get(message.id)?.(message.metrics)
  })

  const ask = (worker: Worker) =>
    new Promise<void>((resolve) => {
      // A worker whose channel closed stays in cluster.workers until its exit is seen too (a killed
      // worker: a few ms). Sending to it then would emit an 'error' that nothing handles, which ends
      // the primary and every worker with it; its last figures stand in instead.
      if (!worker.isConnected()) return resolve()
      const id = randomUUID()
      const timer = setTimeout(finish, WORKER_ANSWER_MS)
      waiting.set(id, (metrics) => {
        latest.set(worker.id, metrics)
        finish()
      })
      function finish() {
        clearTimeout(timer)
        waiting.delete(id)
        resolve()
      }
      // With a callback, a failed send (the channel closed since) is reported here, not as an 'error' event.
      worker.send({ type: REQUEST, id }, (error) => {
        if (error) finish()
      })
    })

  return {
    source: async () => {
      const live = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined)
      await Promise.all(live.map(ask))
      const snapshots = live.flatMap((worker) => latest.get(worker.id) ?? [])
      const registry = AggregatorRegistry.aggregate([snapshots, retired, await own.getMetricsAsJSON()] as never)
      return { contentType: registry.contentType, text: await registry.metrics() }
    },
    async workerExited(worker) {
      const last = latest.get(worker.id)
      latest.delete(worker.id)
      if (!last) return
      const kept = last.filter((metric) => CUMULATIVE.has(String(metric.type)))
      retired = (await AggregatorRegistry.aggregate([retired, kept] as never).getMetricsAsJSON()) as Snapshot
    },
    workerReplaced: () => restarts.inc(),
  }
}

/** Worker side: answers the primary's requests with `registry`'s metrics. */
export function answerMetricsRequests(registry: Registry): void {
  process.on('message', (message: { type?: string; id?: string }) => {
    if (message?.type !== REQUEST || message.id === undefined) return
    const { id } = message
    registry.getMetricsAsJSON().then(
      // The callback keeps a closed channel (the primary is gone) from becoming an uncaught 'error'.
      (metrics) => process.send?.({ type: RESPONSE, id, metrics } satisfies MetricsResponse, () => {}),
      () => {}, // no answer: the primary uses this worker's last figures
    )
  })
}
