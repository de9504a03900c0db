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
 * Stdout is written in batches: lines are held until LOG_BATCH_BYTES have gathered or LOG_FLUSH_MS
 * have passed, then written in one system call (one for dozens of request lines under load), and
 * pino flushes what is pending when the process exits. A line at level `error` or above is written
 * at once with everything batched before it, so the lines a crash investigation needs most are on
 * stdout before the process can be killed; a SIGKILL loses at most one batch of lines below `error`.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream, mixin?: () => object): Logger {
  const options = {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    ...(mixin && { mixin }),
  }
  return pino(options, destination ?? stdoutDestination())
}

// One buffer for every line, in order, shared by every logger of the process (one stdout); `dedupe`
// sends each line to the stream with the highest level it reaches (pino has already dropped lines
// below LOG_LEVEL), so an error or fatal line goes through the second stream only, which flushes the
// buffer with it. The batch is written synchronously, as pino's own default destination writes every
// line: an asynchronous write leaves sonic-boom appending each new line to the batch in flight and
// measuring it again (up to 16 KiB copied per line under load, docs/benchmarks.md), and a stalled
// stdout would grow memory without bound instead of holding the process back. pino flushes only
// its asynchronous destinations at exit, so the last batch is written here.
let stdout: DestinationStream | undefined
function stdoutDestination(): DestinationStream {
  if (stdout) return stdout
  const batched = pino.destination({ dest: 1, sync: true, minLength: LOG_BATCH_BYTES, periodicFlush: LOG_FLUSH_MS })
  process.once('exit', () => {
    try {
      batched.flushSync()
    } catch {
      // stdout is gone (a closed pipe): nothing left to write the lines to
    }
  })
  const flushed = {
    write(line: string) {
      batched.write(line)
      batched.flushSync()
    },
  }
  stdout = pino.multistream(
    [
      { level: 'trace', stream: batched },
      { level: 'error', stream: flushed },
    ],
    { dedupe: true },
  )
  return stdout
}
