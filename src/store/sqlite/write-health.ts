// Whether storage accepts writes, for readiness (/readyz): a write that failed as unavailable (disk
// full, read-only, I/O error, a lock held elsewhere) marks the store not writable, and the next write
// that succeeds, or a probe write (at most one per WRITE_PROBE_INTERVAL_MS, run only while marked),
// marks it writable again. So a balancer stops sending to an instance that can only answer 503 to
// creates, and sends again once it recovers, even when no create arrives to show it.
import { classifyDriverError, StoreUnavailableError } from '../unavailable.js'

/** Least time (ms) between two probe writes while the store is marked not writable. */
const WRITE_PROBE_INTERVAL_MS = 1000

/** The write outcomes seen so far, and the readiness check built on them. */
export interface WriteHealth {
  /** Wraps a write: records whether it failed as unavailable or succeeded; resolves or rejects as it does. */
  observe<A extends unknown[], R>(write: (...args: A) => Promise<R>): (...args: A) => Promise<R>
  /** Resolves when writes are accepted (no failure seen, or the probe succeeds); rejects with StoreUnavailableError. */
  check(): Promise<void>
}

/** A WriteHealth whose probe is `probe` (a small real write and commit); `now` (ms) is for tests. */
export function trackWrites(probe: () => Promise<void>, now: () => number = Date.now): WriteHealth {
  let failure: StoreUnavailableError | undefined
  let probing: Promise<void> | undefined
  let probedAt = Number.NEGATIVE_INFINITY
  const runProbe = async () => {
    probedAt = now()
    try {
      await probe()
      failure = undefined
    } catch (error) {
      const classified = classifyDriverError(error)
      failure = classified instanceof StoreUnavailableError ? classified : new StoreUnavailableError(error)
    }
  }
  return {
    observe:
      (write) =>
      async (...args) => {
        try {
          const result = await write(...args)
          failure = undefined
          return result
        } catch (error) {
          if (error instanceof StoreUnavailableError) failure = error
          throw error
        }
      },
    check: async () => {
      if (!failure) return
      if (now() - probedAt >= WRITE_PROBE_INTERVAL_MS) {
        probing ??= runProbe().finally(() => {
          probing = undefined
        })
      }
      await probing
      if (failure) throw failure
    },
  }
}
