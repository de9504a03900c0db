// What a bench run sends: a weighted mix of request kinds, and the figures one run of it yields.

/** One kind of request. Each request picks a kind by weight, then a path at random from `paths`. */
export interface RequestKind {
  /** Relative weight among the workload's kinds (e.g. 75 / 20 / 5). */
  weight: number
  method: 'GET' | 'POST'
  /** Paths with query, starting with `/v1`; with `idRange`, exactly one prefix such as `/v1/pets/`. */
  paths: string[]
  /** When set, the path is `paths[0]` followed by a random integer from `idRange[0]` to `idRange[1]` inclusive. */
  idRange?: [number, number]
  /** JSON request body, sent with `content-type: application/json`. */
  body?: string
  /** Whether to send the API key. */
  authorized: boolean
  /** An `Accept-Encoding` to send (a compressed answer), when set. */
  acceptEncoding?: string
  /** The only status this kind may be answered with. */
  expectedStatus: number
}

/** A workload: what one measured run sends. */
export interface Workload {
  kinds: RequestKind[]
}

/** Where and how hard to send load. */
export interface LoadOptions {
  /** `http://127.0.0.1:PORT`; nothing else is ever targeted. */
  origin: string
  /** The Authorization header value sent by authorized kinds. */
  authorization: string
  connections: number
  durationS: number
  /** Requests per second over all connections (autocannon `overallRate`); unset for closed-loop saturation. */
  overallRate?: number
}

/** The figures of one run. Latencies are in ms. */
export interface Measurement {
  /** Which generator measured it: `wrk` or `autocannon`. */
  generator: string
  reqPerSec: number
  p50Ms: number
  p99Ms: number
  completed: number
  /** Responses per status code. */
  statuses: Record<string, number>
  /** Socket errors (connect, read, write) and timeouts. */
  errors: number
}

/** The statuses a workload may be answered with. */
export function expectedStatuses(workload: Workload): Set<string> {
  return new Set(workload.kinds.map((kind) => String(kind.expectedStatus)))
}

/** `500×3, 2 socket errors/timeouts`, or '' when every response had an expected status and no request failed. */
export function problems(workload: Workload, result: Measurement): string {
  const allowed = expectedStatuses(workload)
  const parts = Object.entries(result.statuses)
    .filter(([status]) => !allowed.has(status))
    .map(([status, count]) => `${status}×${count}`)
  if (result.errors > 0) parts.push(`${result.errors} socket errors/timeouts`)
  if (result.completed === 0) parts.push('no responses')
  return parts.join(', ')
}
