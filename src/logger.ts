// The service's pino logger: JSON lines to stdout (or a given stream), secrets redacted; error lines
// written at once, the rest in batches; a stdout that fails stops the logging, never the service.
import { writeSync } from 'node:fs'
import { type DestinationStream, type Logger, pino } from 'pino'
// A CommonJS module whose export is the class; its `SonicBoom` property is the class too, typed as such.
import sonicBoom from 'sonic-boom'
import type { LogLevel } from './config.js'

/**
 * Most bytes of log lines written to stdout at once: PIPE_BUF on Linux, so that a batch written to a
 * pipe shared by several processes (WORKERS) is never interleaved with another's (POSIX write(2)).
 */
export const LOG_BATCH_BYTES = 4096
/** Longest a log line waits for its batch, in ms. */
export const LOG_FLUSH_MS = 1000

/** The one line written to stderr when stdout fails; the error's code (EPIPE …) follows it. */
export const STDOUT_FAILED_MESSAGE = 'animal-store: writing log lines to stdout failed; logging stopped, the service goes on'

/**
 * A pino logger at `level`, writing to `destination` (default: stdout). Any `authorization` header
 * that reaches a log object is replaced by `[redacted]` (docs/architecture.md, Secrets stay secret); keys are
 * never passed to the logger in the first place. `mixin` adds fields to every line (the trace ids
 * of src/tracing.ts when tracing is on).
 *
 * Stdout is written in batches: lines are held until the next would take the batch past
 * LOG_BATCH_BYTES, or LOG_FLUSH_MS have passed, then written in one system call (one for a dozen or
 * more request lines under load), and
 * what is pending is written when the process exits. A line at level `error` or above is written
 * at once with everything batched before it, so the lines a crash investigation needs most are on
 * stdout before the process can be killed; a SIGKILL loses at most one batch of lines below `error`.
 *
 * The first write to stdout that fails with anything but EAGAIN (a closed pipe: EPIPE, a full disk,
 * EIO …) stops the logging for the rest of the process: STDOUT_FAILED_MESSAGE goes to stderr once,
 * stdoutFailures() counts it, and every later line is dropped, so requests, a graceful close and
 * the exit go on without a log. EAGAIN (a reader that is slow, not gone) is retried, as before.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream, mixin?: () => object): Logger {
  const options = {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    ...(mixin && { mixin }),
  }
  return pino(options, destination ?? stdoutDestination())
}

let failures = 0

/** Times stdout failed for log lines in this process: 0, or 1 once logging stopped (createLogger). */
export function stdoutFailures(): number {
  return failures
}

// One batch for every line, in order, shared by every logger of the process (one stdout), gathered
// here as one string and handed to sonic-boom whole: sonic-boom measures its pending text again
// (Buffer.byteLength) on every write it is given, which cost more than pino's own work per line
// (docs/benchmarks.md). pino tells the stream each line's level (`lastLevel`, asked for with
// needsMetadataGsym): a line at `error` or above is written at once with the batch before it. The
// batch is written synchronously, as pino's own default destination writes every line: an
// asynchronous write leaves each new line waiting on the one in flight, and a stalled stdout would
// grow memory without bound instead of holding the process back. pino flushes only its asynchronous
// destinations at exit, so the last batch is written here.
//
// sonic-boom reports a failed batch write as an 'error' event and throws one from flushSync (5.0.1
// and later: 4.x retries every error there, every 100 ms, for ever, so a closed pipe froze the
// process); either way the stream is dropped at the first failure.
let stdout: DestinationStream | undefined
function stdoutDestination(): DestinationStream {
  if (stdout) return stdout
  const boom = new sonicBoom.SonicBoom({ fd: 1, sync: true })
  let batch = ''
  let batchBytes = 0
  let failed = false
  const fail = (error: unknown) => {
    if (failed) return
    failed = true
    failures++
    boom.destroy()
    reportOnStderr(error)
  }
  // A batch is one synchronous write (sonic-boom retries EAGAIN, reports other errors as 'error');
  // `durably` adds sonic-boom's flushSync, which also asks for fsync: for an error line and at exit.
  const flush = (durably = false) => {
    if (failed) return
    const lines = batch
    batch = ''
    batchBytes = 0
    try {
      if (lines !== '') boom.write(lines)
      if (durably && !failed) boom.flushSync()
    } catch (error) {
      fail(error)
    }
  }
  boom.on('error', fail)
  process.once('exit', () => flush(true))
  setInterval(flush, LOG_FLUSH_MS).unref()
  const destination = {
    /** Set by pino before each write: the level of the line it writes. */
    lastLevel: 0,
    write(line: string) {
      if (failed) return
      const bytes = Buffer.byteLength(line)
      if (batchBytes + bytes > LOG_BATCH_BYTES) flush()
      batch += line
      batchBytes += bytes
      if (destination.lastLevel >= ERROR_LEVEL) flush(true)
    },
    [pino.symbols.needsMetadataGsym]: true,
  }
  stdout = destination
  return stdout
}

/** pino's numeric level of `error`: lines at it or above are written at once. */
const ERROR_LEVEL = pino.levels.values.error as number

// Synchronously, as the log lines were: the process may be about to exit. A stderr that is gone too
// (the same closed pipe) leaves nowhere to say it.
function reportOnStderr(error: unknown): void {
  const code = (error as NodeJS.ErrnoException | undefined)?.code ?? String(error)
  try {
    writeSync(2, `${STDOUT_FAILED_MESSAGE} (${code})\n`)
  } catch {}
}
