// One autocannon run in its own process (so it can be pinned to a core): `node autocannon-run.js OPTIONS.json`
// reads {workload, options, seed}, sends the workload, and prints one JSON Measurement line to stdout. It is the
// bench's generator when wrk is not installed, and the one that can hold a fixed rate (`overallRate`).
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { seededRandom } from './random.js'
import { percentile } from './stats.js'
import type { LoadOptions, Measurement, RequestKind, Workload } from './workload.js'

/** The request fields autocannon's `setupRequest` may set (autocannon 9 ships no types). */
interface AutocannonRequest {
  method: string
  path: string
  headers: Record<string, string>
  body?: string
}

/** The part of autocannon's result used here. `duration` is in seconds. */
interface AutocannonResult {
  duration: number
  errors: number
  timeouts: number
  statusCodeStats: Record<string, { count: number }>
}

type AutocannonInstance = PromiseLike<AutocannonResult> & {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, latencyMs: number) => void): void
}

const autocannon = createRequire(import.meta.url)('autocannon') as (options: Record<string, unknown>) => AutocannonInstance

/** Upper bound on requests per second of duration: far above what two cores serve, so only a runaway run meets it. */
const MAX_REQUESTS_PER_SECOND = 200_000

async function main(): Promise<void> {
  const { workload, options, seed } = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as {
    workload: Workload
    options: LoadOptions
    seed: number
  }
  const next = seededRandom(seed)
  const total = workload.kinds.reduce((sum, kind) => sum + kind.weight, 0)
  const pick = (): RequestKind => {
    let r = next() * total
    for (const kind of workload.kinds) {
      r -= kind.weight
      if (r < 0) return kind
    }
    return workload.kinds[workload.kinds.length - 1] as RequestKind
  }
  const setupRequest = (request: AutocannonRequest): AutocannonRequest => {
    const kind = pick()
    const path = kind.idRange
      ? `${kind.paths[0]}${kind.idRange[0] + Math.floor(next() * (kind.idRange[1] - kind.idRange[0] + 1))}`
      : (kind.paths[Math.floor(next() * kind.paths.length)] as string)
    const headers: Record<string, string> = {}
    if (kind.authorized) headers.authorization = options.authorization
    if (kind.body !== undefined) headers['content-type'] = 'application/json'
    if (kind.acceptEncoding !== undefined) headers['accept-encoding'] = kind.acceptEncoding
    return { ...request, method: kind.method, path, headers, body: kind.body ?? '' }
  }
  const latencies: number[] = []
  const instance = autocannon({
    url: options.origin,
    connections: options.connections,
    duration: options.durationS,
    maxOverallRequests: MAX_REQUESTS_PER_SECOND * options.durationS,
    ...(options.overallRate !== undefined && { overallRate: options.overallRate }),
    timeout: 10,
    requests: [{ setupRequest }],
  })
  instance.on('response', (_client, _status, _bytes, latencyMs) => {
    latencies.push(latencyMs)
  })
  const result = await instance
  latencies.sort((a, b) => a - b)
  const statuses: Record<string, number> = {}
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) statuses[status] = count
  const measurement: Measurement = {
    generator: 'autocannon',
    reqPerSec: latencies.length / result.duration,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    completed: latencies.length,
    statuses,
    errors: result.errors + result.timeouts,
  }
  process.stdout.write(`${JSON.stringify(measurement)}\n`)
}

main().catch((error: unknown) => {
  process.stderr.write(`autocannon-run failed: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})
