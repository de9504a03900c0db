// The soak's binding to autocannon 9, which ships no types: the parts of its API the soak uses.
import { createRequire } from 'node:module'

/** One request in autocannon's `requests` list, with the per-request hooks the soak uses. */
export interface AutocannonRequest {
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest
  onResponse?: (status: number) => void
}

/** The part of autocannon's result the soak reads. */
export interface AutocannonResult {
  errors: number
  timeouts: number
  statusCodeStats: Record<string, { count: number }>
}

/** A running autocannon: its result as a promise, per-response events, and stop(). */
export type AutocannonInstance = PromiseLike<AutocannonResult> & {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, latencyMs: number) => void): void
  stop(): void
}

/** autocannon itself (CommonJS), typed with the options the soak passes. */
export const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string
  connections: number
  duration: number
  timeout: number
  requests: AutocannonRequest[]
  setupClient: (client: { setRequests(requests: AutocannonRequest[]): void }) => void
}) => AutocannonInstance
