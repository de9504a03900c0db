// Pets on SQLite: statements prepared once and run synchronously by better-sqlite3 (no query builder
// on the request path), and group commit for concurrent creates (group-commit.ts).
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
  type SqlDialect,
  storedPet,
} from './pets.js'
import { createSqliteWriter } from './sqlite-writer.js'

const SQLITE: SqlDialect = { int64Text: (column) => `cast(pets.${column} as text)`, parameter: () => '?' }

/**
 * A PetStore over an open better-sqlite3 database (migrated, safe integers on) at `path`. Reads run
 * here; inserts run on a writer thread (sqlite-writer.ts), or here for `:memory:`, which a thread
 * cannot share, and resolve after their commit. Rejects with the driver's error (store/index.ts
 * classifies it). `close` stops the writer thread.
 */
export function sqlitePetStore(database: BetterSqlite3.Database, path: string): PetStore & { close(): Promise<void> } {
  // Prepared on first use: the store is opened before migrations create the table.
  let prepared: ReturnType<typeof prepare> | undefined
  const statements = () => {
    prepared ??= prepare(database)
    return prepared
  }
  const insertOne = (draft: PetDraft): Pet => statements().insertOne(draft)
  const writer = path === ':memory:' ? undefined : createSqliteWriter(path)
  return {
    insertPet: writer ? writer.insertPet : groupCommit((drafts) => statements().insertBatch(drafts), insertOne),
    close: async () => writer?.close(),
    listPets: async (query) => {
      const { variant, parameters } = listPetsVariant(query)
      return statements()
        .list.get(variant)
        ?.all(...parameters) as Pet[]
    },
    findPet: async (id) => statements().find.get(id) as Pet | undefined,
  }
}

function prepare(database: BetterSqlite3.Database) {
  const list = new Map<ListVariant, BetterSqlite3.Statement>(
    LIST_VARIANTS.map((variant) => [variant, database.prepare(listPetsSql(SQLITE, variant))]),
  )
  const insert = database.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')
  const insertOne = (draft: PetDraft): Pet =>
    storedPet(draft, String(insert.run(draft.name, draft.categoryId, draft.status).lastInsertRowid))
  return {
    list,
    find: database.prepare(findPetSql(SQLITE)),
    insertOne,
    insertBatch: database.transaction((drafts: PetDraft[]) => drafts.map(insertOne)),
  }
}
