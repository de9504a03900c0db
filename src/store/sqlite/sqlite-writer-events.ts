// What the SQLite writer reports as it works, for metrics and traces: creates waiting for the writer
// thread, and each commit's duration (measured on the thread). The writer calls these hooks; the
// metrics subscribe through node:diagnostics_channel, so an unobserved writer pays one counter.
import { channel } from 'node:diagnostics_channel'
import { performance } from 'node:perf_hooks'

/** One commit of the writer thread: its duration (the transaction with its fsync), in seconds, and rows written. */
export interface WriterCommit {
  seconds: number
  rows: number
}

/** The channel each WriterCommit is published on (main thread), for whoever measures commits. */
export const WRITER_COMMIT_CHANNEL = 'animal-store:sqlite-writer:commit'
const commits = channel(WRITER_COMMIT_CHANNEL)

let waiting = 0
let failures = 0

/** Creates sent to the writer thread of this process and not yet answered (queued or committing). */
export function writerQueueDepth(): number {
  return waiting
}

/** Times the writer thread of this process died unexpectedly (the next create starts a new one). */
export function writerThreadFailures(): number {
  return failures
}

/**
 * The writer's hooks, called on the main thread: a create sent, creates answered, a commit reported,
 * the thread lost.
 */
export const writerEvents = {
  threadFailed(): void {
    failures++
  },
  sent(): void {
    waiting++
  },
  answered(count = 1): void {
    waiting = Math.max(0, waiting - count)
  },
  committed(commit: WriterCommit): void {
    if (commits.hasSubscribers) commits.publish(commit)
  },
}

/**
 * Thread side: `write` (one transaction) timed; `report` gets its WriterCommit once it committed
 * (a failed transaction is not a commit). `rows` counts what one call writes.
 */
export function timedCommit<A, R>(write: (input: A) => R, rows: (input: A) => number, report: (commit: WriterCommit) => void) {
  return (input: A): R => {
    const start = performance.now()
    const result = write(input)
    report({ seconds: (performance.now() - start) / 1000, rows: rows(input) })
    return result
  }
}
