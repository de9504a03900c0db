// SQLite group commit: creates that arrive together are written in one transaction, so they share
// one fsync (synchronous=FULL) instead of paying one each. Every caller still resolves only after
// the commit that holds its row, so a 201 is never sent for a row that is not on stable storage.
import type { Kysely } from 'kysely'
import type { Pet } from '../schemas.js'
import { insertPet, type PetDraft } from './pets.js'
import type { Database } from './tables.js'

interface Waiting {
  draft: PetDraft
  resolve: (pet: Pet) => void
  reject: (error: unknown) => void
}

/**
 * An insertPet that batches the creates queued during one turn of the event loop into one
 * transaction. If a batch fails, each of its creates is retried alone, so one bad row cannot fail
 * the others and every caller gets its own outcome.
 */
export function groupCommitInserts(db: Kysely<Database>): (draft: PetDraft) => Promise<Pet> {
  let queue: Waiting[] = []
  const flush = async () => {
    const batch = queue
    queue = []
    if (batch.length > 1) {
      try {
        const pets = await db.transaction().execute(async (trx) => {
          const inserted: Pet[] = []
          for (const { draft } of batch) inserted.push(await insertPet(trx, draft))
          return inserted
        })
        for (const [i, waiting] of batch.entries()) waiting.resolve(pets[i] as Pet)
        return
      } catch {
        // fall through: one at a time
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
