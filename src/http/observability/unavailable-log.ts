// Logging a storm of identical 503s: a database outage or a full disk fails every request the same
// way, and a line with a stack trace for each (thousands a minute) buries everything else and can
// fill the disk that is already full. The first failure of a kind is logged at once (warn, no stack);
// the rest of its interval are counted and logged as one line with the count when it ends.
import type { FastifyBaseLogger } from 'fastify'
import { StoreUnavailableError } from '../../store/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where requests failing with StoreUnavailableError are logged (buildApp installs it). */
    unavailableLog: UnavailableLog
  }
}

/** The interval (ms) over which identical unavailability failures are counted into one line. */
const UNAVAILABLE_LOG_INTERVAL_MS = 10_000

/** Records one request that failed with `error` (a StoreUnavailableError); `flush` logs pending counts now. */
export interface UnavailableLog {
  (error: StoreUnavailableError, request: { id: string; routeOptions: { url?: string | undefined } }): void
  flush(): void
}

interface Window {
  /** The driver code and message of the failures counted. */
  code: string | undefined
  cause: string
  /** Failures after the first, not logged yet. */
  more: number
  since: number
  timer: NodeJS.Timeout
}

/**
 * An UnavailableLog on `logger`: one `warn` line `database unavailable` (`code`, `cause`, `reqId`,
 * `route`, `count: 1`) for the first failure of a kind (same driver code and message), then, when
 * `intervalMs` has passed, one more with `count` and `intervalMs` for those that followed, if any.
 */
export function createUnavailableLog(logger: FastifyBaseLogger, intervalMs = UNAVAILABLE_LOG_INTERVAL_MS): UnavailableLog {
  const windows = new Map<string, Window>()
  const close = (kind: string) => {
    const window = windows.get(kind)
    if (!window) return
    windows.delete(kind)
    clearTimeout(window.timer)
    if (window.more > 0) {
      logger.warn(
        { code: window.code, cause: window.cause, count: window.more, intervalMs: Date.now() - window.since },
        'database unavailable (repeated)',
      )
    }
  }
  const record = ((error, request) => {
    const cause = error.cause instanceof Error ? error.cause.message : error.message
    const kind = `${error.driverCode} ${cause}`
    const window = windows.get(kind)
    if (window) {
      window.more++
      return
    }
    const timer = setTimeout(() => close(kind), intervalMs)
    timer.unref()
    windows.set(kind, { code: error.driverCode, cause, more: 0, since: Date.now(), timer })
    logger.warn(
      { reqId: request.id, route: request.routeOptions.url ?? null, code: error.driverCode, cause, count: 1 },
      'database unavailable',
    )
  }) as UnavailableLog
  record.flush = () => {
    for (const kind of [...windows.keys()]) close(kind)
  }
  return record
}

/** The StoreUnavailableError behind a request's failure, if that is what it was. */
export function unavailableCause(error: unknown): StoreUnavailableError | undefined {
  for (let current = error; current instanceof Error; current = current.cause) {
    if (current instanceof StoreUnavailableError) return current
  }
  return undefined
}
