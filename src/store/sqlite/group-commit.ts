// SQLite group commit: creates that arrive together are written in one transaction, so they share
// one fsync (synchronous=FULL) instead of paying one each. Every caller still resolves only after
// the commit that holds its row, so a 201 is never sent for a row that is not on stable storage.
import { isTransientDriverError } from '../unavailable.js'

interface Waiting<T, R> {
  item: T
  resolve: (result: R) => void
  reject: (error: unknown) => void
}

/** Most rows per transaction: bounds how long one commit holds the connection (and reads). */
const MAX_BATCH_ROWS = 256

/**
 * Wraps synchronous inserts into an asynchronous one that batches the items queued during one turn
 * of the event loop (up to MAX_BATCH_ROWS) into one call of `insertBatch` (one transaction). If a
 * batch fails with a transient error (busy, full, read-only) every caller gets it at once; any other
 * failure is retried row by row with `insertOne`, so one bad row cannot fail the others and every
 * caller gets its own outcome. Rejects with the driver's error as raised: the store's door
 * (store/index.ts) classifies it, once.
 */
export function groupCommit<T, R>(insertBatch: (items: T[]) => R[], insertOne: (item: T) => R): (item: T) => Promise<R> {
  const queue: Array<Waiting<T, R>> = []
  const flush = () => {
    const batch = queue.splice(0, MAX_BATCH_ROWS)
    if (queue.length > 0) setImmediate(flush)
    if (batch.length > 1) {
      try {
        const results = insertBatch(batch.map((waiting) => waiting.item))
        for (const [i, waiting] of batch.entries()) waiting.resolve(results[i] as R)
        return
      } catch (error) {
        if (isTransientDriverError(error)) {
          for (const waiting of batch) waiting.reject(error)
          return
        }
        // otherwise: one at a time, below
      }
    }
    for (const waiting of batch) {
      try {
        waiting.resolve(insertOne(waiting.item))
      } catch (error) {
        waiting.reject(error)
      }
    }
  }
  return (item) =>
    new Promise<R>((resolve, reject) => {
      queue.push({ item, resolve, reject })
      if (queue.length === 1) setImmediate(flush)
    })
}
