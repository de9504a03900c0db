// The background sweep of expired Idempotency-Key records: every SWEEP_INTERVAL_MS, bounded batches
// of SWEEP_BATCH rows until none is left, so records leave 24 h after their create whether or not
// more creates follow. Safe with many instances and workers at once: each batch is one bounded
// DELETE (on PostgreSQL skipping rows another transaction holds; on SQLite on the writer thread).
import type { PetStore } from './pet-store.js'

/** How often (ms) a process sweeps: also the Retry-After of a create refused at the record limit. */
const SWEEP_INTERVAL_MS = 60_000

/** Records one DELETE removes at most: bounds how long it holds locks (a few ms). */
const SWEEP_BATCH = 500

/** Batches one sweep runs at most (250,000 records), so a backlog is worked off over a few runs. */
const SWEEP_MAX_BATCHES = 500

/** Options of startIdempotencySweeper; the defaults are the constants above. */
export interface SweeperOptions {
  /** Records created before `now() - ttlMs` are expired. */
  ttlMs: number
  intervalMs?: number
  batch?: number
  maxBatches?: number
  /** ms since the epoch; for tests. */
  now?: () => number
  /** Called with a failed batch's error (the database down: the next run tries again). */
  onError: (error: unknown) => void
}

/** A running sweeper: `stop` clears its timer and resolves once a run under way has finished. */
export interface Sweeper {
  stop(): Promise<void>
}

/**
 * Starts sweeping `pets`' expired records on a timer that never keeps the process alive (unref).
 * One run at a time; a run stops at the first short batch, at maxBatches, or on an error.
 */
export function startIdempotencySweeper(
  pets: Pick<PetStore, 'deleteExpiredIdempotencyRecords'>,
  options: SweeperOptions,
): Sweeper {
  const { ttlMs, intervalMs = SWEEP_INTERVAL_MS, batch = SWEEP_BATCH, maxBatches = SWEEP_MAX_BATCHES, now = Date.now } = options
  let running: Promise<void> | undefined
  let stopped = false
  const run = async () => {
    const expiredBefore = now() - ttlMs
    try {
      for (let i = 0; i < maxBatches && !stopped; i++) {
        if ((await pets.deleteExpiredIdempotencyRecords(expiredBefore, batch)) < batch) return
      }
    } catch (error) {
      options.onError(error)
    }
  }
  const timer = setInterval(() => {
    running ??= run().finally(() => {
      running = undefined
    })
  }, intervalMs)
  timer.unref()
  return {
    stop: async () => {
      stopped = true
      clearInterval(timer)
      await running
    },
  }
}
