// Pets on SQLite: reads through statements prepared once and run synchronously by better-sqlite3 (no
// query builder on the request path); writes on the writer thread (sqlite-writer.ts), group-committed.
import type BetterSqlite3 from 'better-sqlite3'
import type { Pet } from '../schemas.js'
import { groupCommit } from './group-commit.js'
import {
  findPetSql,
  LIST_VARIANTS,
  type ListVariant,
  listPetsSql,
  listPetsVariant,
  type PetDraft,
  type PetStore,
} from './pets.js'
import { createSqliteWriter } from './sqlite-writer.js'
import { type OnceJob, prepareWrites, SQLITE, type SqliteWrites } from './sqlite-writes.js'

/**
 * A PetStore over an open better-sqlite3 database (migrated, safe integers on) at `path`. Reads run
 * here; creates run on a writer thread, or here for `:memory:`, which a thread cannot share, and
 * resolve after their commit. Rejects with the driver's error (store/index.ts classifies it).
 * `close` stops the writer thread.
 */
export function sqlitePetStore(database: BetterSqlite3.Database, path: string): PetStore & { close(): Promise<void> } {
  // Prepared on first use: the store is opened before migrations create the tables.
  let reads: ReturnType<typeof prepareReads> | undefined
  const read = () => {
    reads ??= prepareReads(database)
    return reads
  }
  const writer = path === ':memory:' ? undefined : createSqliteWriter(path)
  const inline = writer ? undefined : inlineWrites(database)
  return {
    insertPet: writer?.insertPet ?? (inline as InlineWrites).insertPet,
    insertPetOnce: writer?.insertPetOnce ?? (inline as InlineWrites).insertPetOnce,
    deleteExpiredIdempotencyRecords:
      writer?.deleteExpiredIdempotencyRecords ?? (inline as InlineWrites).deleteExpiredIdempotencyRecords,
    probeWrite: writer?.probeWrite ?? (inline as InlineWrites).probeWrite,
    close: async () => writer?.close(),
    listPets: async (query) => {
      const { variant, parameters } = listPetsVariant(query)
      return read()
        .list.get(variant)
        ?.all(...parameters) as Pet[]
    },
    findPet: async (id) => read().find.get(id) as Pet | undefined,
  }
}

function prepareReads(database: BetterSqlite3.Database) {
  return {
    list: new Map<ListVariant, BetterSqlite3.Statement>(
      LIST_VARIANTS.map((variant) => [variant, database.prepare(listPetsSql(SQLITE, variant))]),
    ),
    find: database.prepare(findPetSql(SQLITE)),
  }
}

type InlineWrites = Pick<PetStore, 'insertPet' | 'insertPetOnce' | 'deleteExpiredIdempotencyRecords' | 'probeWrite'>

// `:memory:`: the same group-committed writes, on this connection.
function inlineWrites(database: BetterSqlite3.Database): InlineWrites {
  let prepared: SqliteWrites | undefined
  const writes = () => {
    prepared ??= prepareWrites(database)
    return prepared
  }
  const insertPet = groupCommit(
    (drafts: PetDraft[]) => writes().insertBatch(drafts),
    (draft: PetDraft) => writes().insertOne(draft),
  )
  const insertOnce = groupCommit(
    (jobs: OnceJob[]) => writes().insertOnceBatch(jobs),
    (job) => writes().insertOnce(job),
  )
  return {
    insertPet,
    insertPetOnce: (draft, once) => insertOnce({ draft, once }),
    deleteExpiredIdempotencyRecords: async (expiredBefore, limit) => writes().sweep(expiredBefore, limit),
    probeWrite: async () => writes().probe(),
  }
}
