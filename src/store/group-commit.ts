// SQLite group commit: creates that arrive together are written in one transaction, so they share
// one fsync (synchronous=FULL) instead of paying one each. Every caller still resolves only after
// the commit that holds its row, so a 201 is never sent for a row that is not on stable storage.
import type { Kysely } from 'kysely'
import type { Pet } from '../schemas.js'
import { insertPet, type PetDraft } from './pets.js'
import type { Database } from './tables.js'
import { classifyDriverError, StoreUnavailableError } from './unavailable.js'

interface Waiting {
  draft: PetDraft
  resolve: (pet: Pet) => void
  reject: (error: unknown) => void
}

/** Most rows per transaction: bounds how long one commit holds the connection (and reads). */
const MAX_BATCH_ROWS = 256

/**
 * An insertPet that batches the creates queued during one turn of the event loop (up to
 * MAX_BATCH_ROWS) into one transaction. If a batch fails with a transient error (busy, full,
 * read-only) every caller gets it at once; any other failure is retried row by row, so one bad row
 * cannot fail the others and every caller gets its own outcome.
 */
export function groupCommitInserts(db: Kysely<Database>): (draft: PetDraft) => Promise<Pet> {
  const queue: Waiting[] = []
  const flush = async () => {
    const batch = queue.splice(0, MAX_BATCH_ROWS)
    if (queue.length > 0) setImmediate(flush)
    if (batch.length > 1) {
      try {
        const pets = await db.transaction().execute(async (trx) => {
          const inserted: Pet[] = []
          for (const { draft } of batch) inserted.push(await insertPet(trx, draft))
          return inserted
        })
        for (const [i, waiting] of batch.entries()) waiting.resolve(pets[i] as Pet)
        return
      } catch (error) {
        const classified = classifyDriverError(error)
        if (classified instanceof StoreUnavailableError) {
          for (const waiting of batch) waiting.reject(classified)
          return
        }
        // otherwise: one at a time, below
      }
    }
    for (const waiting of batch) await insertPet(db, waiting.draft).then(waiting.resolve, waiting.reject)
  }
  return (draft) =>
    new Promise<Pet>((resolve, reject) => {
      queue.push({ draft, resolve, reject })
      if (queue.length === 1) setImmediate(flush)
    })
}
