// Pets on SQLite: reads through the compiled statements (pet-sql.ts) prepared once on this
// connection and run synchronously by better-sqlite3, the database rendering each body; writes on
// the writer thread (sqlite-writer.ts), or inline for `:memory:`, group-committed either way.
import type BetterSqlite3 from 'better-sqlite3'
import { compilePetStatements, listVariant, type PageRow } from '../pet-sql.js'
import type { PetStore } from '../pet-store.js'
import { createSqliteWriter } from './sqlite-writer.js'
import { createInserters, prepareWrites } from './sqlite-writes.js'

const STATEMENTS = compilePetStatements('sqlite')

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
  const writer = path === ':memory:' ? undefined : createSqliteWriter(path, STATEMENTS)
  const writes = writer ?? inlineWrites(database)
  return {
    insertPet: writes.insertPet,
    insertPetOnce: writes.insertPetOnce,
    deleteExpiredIdempotencyRecords: writes.deleteExpiredIdempotencyRecords,
    probeWrite: writes.probeWrite,
    close: async () => writer?.close(),
    listPets: async (query) => {
      const page = read().list.get(listVariant(query))
      // A page statement always answers one row (an aggregate over the page).
      const row = page?.prepared.get(...page.compiled.bind(query))
      if (!row) throw new Error('listPets: no page row')
      return {
        json: row.body,
        ids: row.ids ?? '',
        lastId: row.lastId === null ? undefined : String(row.lastId),
        more: row.more === 1n,
      }
    },
    findPet: async (id) => read().find.get(...STATEMENTS.find.bind({ id }))?.body,
  }
}

function prepareReads(database: BetterSqlite3.Database) {
  return {
    list: new Map(
      [...STATEMENTS.list].map(
        ([variant, compiled]) => [variant, { compiled, prepared: database.prepare<unknown[], PageRow>(compiled.sql) }] as const,
      ),
    ),
    find: database.prepare<unknown[], { body: string }>(STATEMENTS.find.sql),
  }
}

type InlineWrites = Pick<PetStore, 'insertPet' | 'insertPetOnce' | 'deleteExpiredIdempotencyRecords' | 'probeWrite'>

// `:memory:`: the same group-committed writes, on this connection.
function inlineWrites(database: BetterSqlite3.Database): InlineWrites {
  const inserters = createInserters(() => prepareWrites(database, STATEMENTS))
  return {
    insertPet: inserters.insertPet,
    insertPetOnce: (draft, once) => inserters.insertPetOnce({ draft, once }),
    deleteExpiredIdempotencyRecords: inserters.sweep,
    probeWrite: inserters.probe,
  }
}
