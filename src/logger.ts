// The service's pino logger: JSON lines to stdout (or a given stream), secrets redacted; error lines
// written at once, the rest in batches.
import { type DestinationStream, type Logger, pino } from 'pino'
import type { LogLevel } from './config.js'

/** Bytes of log lines gathered before one write to stdout. */
export const LOG_BATCH_BYTES = 4096
/** Longest a log line waits for its batch, in ms. */
export const LOG_FLUSH_MS = 1000

/**
 * A pino logger at `level`, writing to `destination` (default: stdout). Any `authorization` header
 * that reaches a log object is replaced by `[redacted]` (docs/architecture.md, Secrets stay secret); keys are
 * never passed to the logger in the first place. `mixin` adds fields to every line (the trace ids
 * of src/tracing.ts when tracing is on).
 *
 * Stdout is written asynchronously in batches: lines are held until LOG_BATCH_BYTES have gathered or
 * LOG_FLUSH_MS have passed (one system call for dozens of request lines under load), and pino
 * flushes what is pending when the process exits. A line at level `error` or above is written
 * synchronously with everything batched before it, so the lines a crash investigation needs most
 * are on stdout before the process can be killed; a SIGKILL loses at most one batch of lines below
 * `error`.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream, mixin?: () => object): Logger {
  const options = {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    ...(mixin && { mixin }),
  }
  return pino(options, destination ?? stdoutDestination())
}

// One buffer for every line, in order; `dedupe` sends each line to the stream with the highest level
// it reaches (pino has already dropped lines below LOG_LEVEL), so an error or fatal line goes through
// the second stream only, which flushes the buffer with it.
function stdoutDestination(): DestinationStream {
  const batched = pino.destination({ dest: 1, sync: false, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS })
  const flushed = {
    write(line: string) {
      batched.write(line)
      batched.flushSync()
    },
  }
  return pino.multistream(
    [
      { level: 'trace', stream: batched },
      { level: 'error', stream: flushed },
    ],
    { dedupe: true },
  )
}
