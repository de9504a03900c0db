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

const SQLITE: SqlDialect = { int64Text: (column) => `cast(pets.${column} as text)`, parameter: () => '?' }

/**
 * A PetStore over an open better-sqlite3 database (migrated, safe integers on). Resolves or rejects
 * with the driver's error as thrown (store/index.ts classifies it); inserts resolve after their commit.
 */
export function sqlitePetStore(database: BetterSqlite3.Database): PetStore {
  // Prepared on first use: the store is opened before migrations create the table.
  let prepared: ReturnType<typeof prepare> | undefined
  const statements = () => {
    prepared ??= prepare(database)
    return prepared
  }
  const insertOne = (draft: PetDraft): Pet => statements().insertOne(draft)
  return {
    insertPet: groupCommit((drafts) => statements().insertBatch(drafts), insertOne),
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
