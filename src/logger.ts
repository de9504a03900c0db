// The service's pino logger: JSON lines to stdout (or a given stream), secrets redacted.
import { type DestinationStream, type Logger, pino } from 'pino'
import type { LogLevel } from './config.js'

/** Bytes of log lines gathered before one write to stdout. */
const LOG_BATCH_BYTES = 4096
/** Longest a log line waits for its batch, in ms. */
const LOG_FLUSH_MS = 1000

/**
 * A pino logger at `level`, writing to `destination` (default: stdout). Any `authorization` header
 * that reaches a log object is replaced by `[redacted]` (docs/architecture.md, Secrets stay secret); keys are
 * never passed to the logger in the first place.
 *
 * Stdout is written asynchronously in batches: lines are held until LOG_BATCH_BYTES have gathered or
 * LOG_FLUSH_MS have passed (one system call for dozens of request lines under load), and pino
 * flushes what is pending when the process exits. A SIGKILL loses at most that much.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
  }
  return pino(
    options,
    destination ?? pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS }),
  )
}
