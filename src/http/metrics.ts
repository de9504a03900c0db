// Prometheus metrics (prom-client): request count and duration by operation and status, database pool
// use, and the process's default metrics. They are served apart from the app, by metrics-server.ts.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import type { PoolStats } from '../store/index.js'

/**
 * A registry with this service's metrics. `poolStats` is read at scrape time.
 * Metric names follow Prometheus conventions (base units: seconds).
 */
export function createMetricsRegistry(poolStats: () => PoolStats): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const labelNames = ['operation', 'method', 'status'] as const
  new Counter({ name: 'http_requests_total', help: 'HTTP requests answered.', labelNames, registers: [registry] })
  new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request received to response sent, in seconds.',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  })
  const gauge = (name: string, help: string, read: (stats: PoolStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read(poolStats()))
      },
    })
  gauge('db_pool_connections', 'PostgreSQL pool connections open (0 on SQLite).', (stats) => stats.total)
  gauge('db_pool_connections_in_use', 'PostgreSQL pool connections running a query.', (stats) => stats.inUse)
  gauge('db_pool_waiting_requests', 'Queries waiting for a free pool connection.', (stats) => stats.waiting)
  return registry
}

/** Records one answered request: label `operation` (the operationId), method, status, duration in ms. */
export interface RequestMetrics {
  record(operation: string, method: string, status: number, durationMs: number): void
}

/** A RequestMetrics over the request counter and duration histogram of `registry` (createMetricsRegistry). */
export function createRequestMetrics(registry: Registry): RequestMetrics {
  const requests = registry.getSingleMetric('http_requests_total') as Counter
  const durations = registry.getSingleMetric('http_request_duration_seconds') as Histogram
  return {
    record(operation, method, status, durationMs) {
      const labels = { operation, method, status: String(status) }
      requests.inc(labels)
      durations.observe(labels, durationMs / 1000)
    },
  }
}
