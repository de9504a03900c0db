// Prometheus metrics (prom-client): request count and duration by operation and status, the build,
// database pool use, the SQLite writer's queue and commits, key-reload failures, a failed log stdout, the rate-limit
// store's state and fallbacks, Idempotency-Key evictions, read replicas (lag, reads per server, fall-backs), and the process's
// default metrics. They are served apart from the app, by metrics-server.ts.
import { subscribe } from 'node:diagnostics_channel'
import type { Server } from 'node:net'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { NODE_VERSION, SERVICE_COMMIT, SERVICE_VERSION } from '../../build-info.js'
import type { PoolStats, ReadStats } from '../../store/index.js'
import {
  WRITER_COMMIT_CHANNEL,
  type WriterCommit,
  writerQueueDepth,
  writerThreadFailures,
} from '../../store/sqlite/sqlite-writer-events.js'
import { SERVER_TIMEOUTS } from '../connection/timeouts.js'
import type { FleetBudgets } from '../pipeline/fleet-budget.js'

/**
 * Upper bounds (s) of the request duration buckets: fine below 100 ms where the API answers, and on
 * past the longest a request can be held open (SERVER_TIMEOUTS.connectionTimeout), so the slow tail
 * lands in a bucket, not only in `+Inf`.
 */
export const REQUEST_DURATION_BUCKETS: readonly number[] = [
  0.001,
  0.0025,
  0.005,
  0.01,
  0.025,
  0.05,
  0.1,
  0.25,
  0.5,
  1,
  2.5,
  5,
  10,
  SERVER_TIMEOUTS.connectionTimeout / 1000,
  (2 * SERVER_TIMEOUTS.connectionTimeout) / 1000,
]

/** Upper bounds (s) of the SQLite commit duration buckets: an fsync takes from tens of µs to seconds. */
const COMMIT_DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]

/** What the registry reads at scrape time, besides the process itself. */
export interface MetricsSources {
  /** The database in use (`sqlite` or `postgres`), a label of `animal_store_build_info`. */
  database: string
  /** The PostgreSQL pool's counts (zeros on SQLite). */
  poolStats: () => PoolStats
  /** Failed periodic reloads of the API keys so far (KeyVerifier.reloadFailures). */
  keyReloadFailures: () => number
  /** Idempotency-Key records deleted before they expired so far (Store.idempotencyRecordsEvicted). */
  idempotencyRecordsEvicted: () => number
  /** Times stdout failed for log lines, after which the process logs nothing (logger.ts stdoutFailures). */
  logStdoutFailures: () => number
  /** The rate limits' shared budgets, when RATE_LIMIT_STORE_URL is set. */
  rateLimits?: Pick<FleetBudgets, 'up' | 'fallbacks'> | undefined
  /** Reads per server and each replica's state (Store.readStats), when DATABASE_REPLICA_URLS is set. */
  readStats?: (() => ReadStats | undefined) | undefined
}

/**
 * A registry with this service's metrics. Names follow Prometheus conventions (base units: seconds;
 * counters end in `_total`); docs/deploying.md, "Metrics", lists them and the alerts built on them
 * (deploy/prometheus-rules.yml). Under WORKERS the primary sums the workers' registries
 * (cluster-metrics.ts): `aggregator` says how each gauge combines.
 */
export function createMetricsRegistry(sources: MetricsSources): Registry {
  const registry = new Registry()
  const registers = [registry]
  collectDefaultMetrics({ register: registry })
  registerRequestMetrics(registers)
  registerBuildInfo(registers, sources.database)
  registerStorageGauges(registers, sources)
  registerFailureTotals(registers, sources)
  registerCommitDurations(registers)
  registerRateLimitStore(registers, sources.rateLimits)
  registerReplicas(registers, sources.readStats ?? (() => undefined))
  return registry
}

/** The request counter and duration histogram, by operation, method and status (createRequestMetrics records them). */
function registerRequestMetrics(registers: Registry[]): void {
  const labelNames = ['operation', 'method', 'status'] as const
  new Counter({ name: 'http_requests_total', help: 'HTTP requests answered.', labelNames, registers })
  new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from request received to response sent, in seconds.',
    labelNames,
    buckets: [...REQUEST_DURATION_BUCKETS],
    registers,
  })
}

/** `animal_store_build_info`: always 1, labelled with the running build and the database. */
function registerBuildInfo(registers: Registry[], database: string): void {
  new Gauge({
    name: 'animal_store_build_info',
    help: 'Always 1; the labels say which build runs: service version, git commit, Node.js version, database.',
    labelNames: ['version', 'commit', 'node', 'database'],
    aggregator: 'max',
    registers,
  }).set({ version: SERVICE_VERSION, commit: SERVICE_COMMIT, node: NODE_VERSION, database }, 1)
}

/** A gauge set from `read()` at each scrape. */
function scrapedGauge(registers: Registry[], name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers,
    collect() {
      this.set(read())
    },
  })
}

/** A counter set to `read()` (a running total kept elsewhere) at each scrape. */
function scrapedTotal(registers: Registry[], name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers,
    collect() {
      this.reset()
      this.inc(read())
    },
  })
}

/** The PostgreSQL pool's connections and waiting queries, and the SQLite writer's queue. */
function registerStorageGauges(registers: Registry[], sources: MetricsSources): void {
  const gauge = (name: string, help: string, read: () => number) => scrapedGauge(registers, name, help, read)
  gauge('db_pool_connections', 'PostgreSQL pool connections open (0 on SQLite).', () => sources.poolStats().total)
  gauge('db_pool_connections_in_use', 'PostgreSQL pool connections running a query.', () => sources.poolStats().inUse)
  gauge('db_pool_connections_idle', 'PostgreSQL pool connections open and idle.', () => {
    const stats = sources.poolStats()
    return stats.total - stats.inUse
  })
  gauge('db_pool_waiting_requests', 'Queries waiting for a free pool connection.', () => sources.poolStats().waiting)
  gauge(
    'animal_store_sqlite_writer_queue_depth',
    'Creates sent to the SQLite writer thread and not yet answered (queued or committing; 0 on PostgreSQL).',
    writerQueueDepth,
  )
}

/** The totals kept elsewhere: writer thread deaths, failed key reloads, Idempotency-Key records evicted, a failed stdout. */
function registerFailureTotals(registers: Registry[], sources: MetricsSources): void {
  const total = (name: string, help: string, read: () => number) => scrapedTotal(registers, name, help, read)
  total(
    'animal_store_sqlite_writer_failures_total',
    'Times the SQLite writer thread died (the creates under way got 500; the next one starts a new thread).',
    writerThreadFailures,
  )
  total(
    'animal_store_key_reload_failures_total',
    'Periodic reloads of the stored API keys that failed (the previous set was kept, so revocations may be stale).',
    sources.keyReloadFailures,
  )
  total(
    'animal_store_idempotency_records_evicted_total',
    'Idempotency-Key records deleted before their 24 h because their API key reached IDEMPOTENCY_RECORDS_PER_KEY (a retry with such a key would create again).',
    sources.idempotencyRecordsEvicted,
  )
  total(
    'animal_store_log_stdout_failures_total',
    'Times writing log lines to stdout failed (a closed pipe: any error but EAGAIN); logging stops at the first, so above 0 the process logs nothing until it is restarted with a working stdout.',
    sources.logStdoutFailures,
  )
}

/**
 * The rate-limit store (RATE_LIMIT_STORE_URL): whether it answers, and the requests counted per
 * process because it did not (both 0 without a store). Under WORKERS the primary shows the least
 * available worker's view.
 */
function registerRateLimitStore(registers: Registry[], budgets: MetricsSources['rateLimits']): void {
  new Gauge({
    name: 'animal_store_rate_limit_store_up',
    help: 'Whether the rate-limit store (RATE_LIMIT_STORE_URL) answered the last lease: 1 yes (limits fleet-wide), 0 no or none set.',
    aggregator: 'min',
    registers,
    collect() {
      this.set(budgets?.up ? 1 : 0)
    },
  })
  scrapedTotal(
    registers,
    'animal_store_rate_limit_store_fallbacks_total',
    'Requests whose rate limit was counted per process because the rate-limit store (RATE_LIMIT_STORE_URL) did not answer.',
    () => budgets?.fallbacks ?? 0,
  )
}

/**
 * Read replicas (DATABASE_REPLICA_URLS): each one's lag and whether it gets reads, reads by the server
 * that served them, and reads sent to the primary by why (no series without replicas). Under WORKERS
 * the primary shows each replica's greatest lag, and serving 1 while any worker still reads from it:
 * 0 means no read goes there.
 */
function registerReplicas(registers: Registry[], read: () => ReadStats | undefined): void {
  new Gauge({
    name: 'animal_store_replica_lag_seconds',
    help: 'How far behind the primary each replica is at most, in seconds: the time since the primary was last seen at a WAL position the replica has replayed (up to 0.25 s when current). Above REPLICA_MAX_LAG_MS it gets no reads.',
    labelNames: ['replica'],
    aggregator: 'max',
    registers,
    collect() {
      this.reset()
      for (const replica of read()?.replicas ?? []) this.set({ replica: replica.name }, replica.lagSeconds)
    },
  })
  new Gauge({
    name: 'animal_store_replica_serving',
    help: 'Whether each replica gets reads now: 1 yes; 0 when down, promoted, of another cluster or behind by more than REPLICA_MAX_LAG_MS.',
    labelNames: ['replica'],
    aggregator: 'max',
    registers,
    collect() {
      this.reset()
      for (const replica of read()?.replicas ?? []) this.set({ replica: replica.name }, replica.serving ? 1 : 0)
    },
  })
  new Counter({
    name: 'animal_store_database_reads_total',
    help: 'listPets and getPet reads by the server that served them: `primary`, or `replica-N` (N its place in DATABASE_REPLICA_URLS).',
    labelNames: ['target'],
    registers,
    collect() {
      this.reset()
      const stats = read()
      if (!stats) return
      this.inc({ target: 'primary' }, stats.primaryReads)
      for (const replica of stats.replicas) this.inc({ target: replica.name }, replica.reads)
    },
  })
  new Counter({
    name: 'animal_store_replica_fallbacks_total',
    help: 'Reads sent to the primary although replicas are set, by reason: `unavailable` (no replica in rotation), `wait` (none had replayed the consistency token or cursor within REPLICA_WAIT_MS), `error` (the read failed on a replica and was repeated on the primary).',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset()
      for (const [reason, count] of Object.entries(read()?.fallbacks ?? {})) this.inc({ reason }, count)
    },
  })
}

/** The SQLite writer's commit durations, observed from its diagnostics channel (sqlite-writer-events.ts). */
function registerCommitDurations(registers: Registry[]): void {
  const commits = new Histogram({
    name: 'animal_store_sqlite_commit_duration_seconds',
    help: 'Duration of each SQLite writer-thread commit (one transaction of one or more creates, with its fsync), in seconds.',
    buckets: COMMIT_DURATION_BUCKETS,
    registers,
  })
  subscribe(WRITER_COMMIT_CHANNEL, (message) => commits.observe((message as WriterCommit).seconds))
}

/**
 * Adds the public listener's connection gauges to `registry`: `http_server_connections` (open now,
 * counted at scrape time) and `http_server_max_connections` (MAX_CONNECTIONS), for a saturation alert.
 */
export function observeConnections(registry: Registry, server: Server, maxConnections: number): void {
  new Gauge({
    name: 'http_server_connections',
    help: 'Client connections open on the public listener.',
    registers: [registry],
    async collect() {
      this.set(await new Promise<number>((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count))))
    },
  })
  new Gauge({
    name: 'http_server_max_connections',
    help: 'Client connections a process accepts at most (MAX_CONNECTIONS); past it new ones are closed at once.',
    registers: [registry],
  }).set(maxConnections)
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
