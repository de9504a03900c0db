// Load generation for the bench: one bounded autocannon run against one target, reduced to the figures we report.
import type { EventEmitter } from 'node:events'
import { createRequire } from 'node:module'
import { percentile } from './stats.js'

/** The part of autocannon's options the bench uses (autocannon 9 ships no types). */
interface AutocannonOptions {
  url: string
  method: string
  headers: Record<string, string>
  body?: string
  connections: number
  duration?: number
  amount?: number
  maxOverallRequests?: number
  timeout: number
}

/** The part of autocannon's result the bench uses. `duration` is in seconds. */
interface AutocannonResult {
  duration: number
  errors: number
  timeouts: number
  statusCodeStats: Record<string, { count: number }>
}

/** An autocannon run: a promise of its result that also emits `response` (client, status, bytes, latency ms). */
type AutocannonInstance = EventEmitter & PromiseLike<AutocannonResult>

const autocannon = createRequire(import.meta.url)('autocannon') as (options: AutocannonOptions) => AutocannonInstance

/** One kind of request the bench sends, and the only status it may answer with. */
export interface Scenario {
  name: string
  method: 'GET' | 'POST'
  /** Path and query, starting with `/v1`. */
  path: string
  /** JSON request body, sent with `content-type: application/json`. */
  body?: string
  /** Whether to send the API key. */
  authorized: boolean
  expectedStatus: number
}

/** Where and how hard to send load. */
export interface LoadOptions {
  /** `http://127.0.0.1:PORT`; nothing else is ever targeted. */
  origin: string
  /** The Authorization header value sent when the scenario is authorized. */
  authorization: string
  connections: number
  /** Either a duration in seconds, or an exact number of requests. */
  durationS?: number
  amount?: number
}

/** The figures of one run. Latencies are in ms, measured per request with sub-ms resolution. */
export interface Measurement {
  reqPerSec: number
  p50Ms: number
  p99Ms: number
  completed: number
  /** Responses per status code other than the expected one. */
  unexpected: Record<string, number>
  /** Socket errors and timeouts. */
  errors: number
}

/** Upper bound on requests in a timed run: far above what two cores serve, so only a runaway run meets it. */
const MAX_REQUESTS_PER_SECOND = 200_000

/**
 * Runs `scenario` against `options.origin` with autocannon (keep-alive, no pipelining) for `durationS` seconds
 * or `amount` requests, and measures throughput, latency percentiles over every response, and statuses.
 * Throws if the origin is not on 127.0.0.1.
 */
export async function measure(scenario: Scenario, options: LoadOptions): Promise<Measurement> {
  if (!options.origin.startsWith('http://127.0.0.1:')) throw new Error(`refusing to load ${options.origin}: 127.0.0.1 only`)
  const headers: Record<string, string> = {}
  if (scenario.authorized) headers.authorization = options.authorization
  if (scenario.body !== undefined) headers['content-type'] = 'application/json'
  const latencies: number[] = []
  const instance = autocannon({
    url: options.origin + scenario.path,
    method: scenario.method,
    headers,
    ...(scenario.body !== undefined && { body: scenario.body }),
    connections: options.connections,
    ...(options.amount !== undefined
      ? { amount: options.amount }
      : { duration: options.durationS, maxOverallRequests: MAX_REQUESTS_PER_SECOND * (options.durationS ?? 1) }),
    timeout: 10,
  })
  instance.on('response', (_client: unknown, _status: number, _bytes: number, latencyMs: number) => {
    latencies.push(latencyMs)
  })
  const result = await instance
  const unexpected: Record<string, number> = {}
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) {
    if (Number(status) !== scenario.expectedStatus) unexpected[status] = count
  }
  latencies.sort((a, b) => a - b)
  return {
    reqPerSec: latencies.length / result.duration,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    completed: latencies.length,
    unexpected,
    errors: result.errors + result.timeouts,
  }
}
