// The one log line and the metrics of each answered request, recorded after every response of the
// current turn of the event loop is written (one setImmediate per turn), so that no response waits
// for the bookkeeping of the requests answered before it in the same turn.
import type { FastifyBaseLogger } from 'fastify'
import type { RequestMetrics } from './metrics.js'

/** One answered request: the logger and fields of its `request` line, and its metric labels and duration (ms). */
export interface AnsweredRequest {
  log: FastifyBaseLogger
  fields: object
  operation: string
  method: string
  status: number
  durationMs: number
}

/** Records answered requests; `flush` records the ones still waiting at once (on close). */
export interface RequestRecorder {
  record(answered: AnsweredRequest): void
  flush(): void
}

/**
 * A recorder writing each request's line through its logger and counting it in `metrics`. `atOnce`
 * records inside the request's own turn instead: with tracing on, the logger's mixin reads the trace
 * ids from the active span, which a later turn no longer has.
 */
export function createRequestRecorder(metrics: RequestMetrics | undefined, { atOnce }: { atOnce: boolean }): RequestRecorder {
  const write = ({ log, fields, operation, method, status, durationMs }: AnsweredRequest) => {
    log.info(fields, 'request')
    metrics?.record(operation, method, status, durationMs)
  }
  if (atOnce) return { record: write, flush: () => {} }
  let waiting: AnsweredRequest[] = []
  const flush = () => {
    const batch = waiting
    waiting = []
    for (const answered of batch) write(answered)
  }
  return {
    record(answered) {
      if (waiting.push(answered) === 1) setImmediate(flush)
    },
    flush,
  }
}
