// Pets on SQLite: statements prepared once and run synchronously by better-sqlite3 (no query builder
// on the request path), and group commit for concurrent creates (group-commit.ts).
import type BetterSqlite3 from 'better-sqlite3'
import type { Pet } from '../schemas.js'
import { groupCommit } from './group-commit.js'
import {
  claimedOutcome,
  findPetSql,
  type IdempotencyRecord,
  type IdempotentCreate,
  type IdempotentOutcome,
  idempotencySql,
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
  const insertOnce = (job: OnceJob): IdempotentOutcome => statements().insertOnce(job)
  // Creates with an Idempotency-Key are group-committed here, on the reading connection, in batches
  // of their own (their stored response is rendered inside the transaction, by a function that cannot
  // cross to the writer thread); SQLite's write lock orders them with the writer thread's commits.
  const insertPetOnce = groupCommit((jobs: OnceJob[]) => statements().insertOnceBatch(jobs), insertOnce)
  const writer = path === ':memory:' ? undefined : createSqliteWriter(path)
  return {
    insertPet: writer ? writer.insertPet : groupCommit((drafts) => statements().insertBatch(drafts), insertOne),
    insertPetOnce: (draft, once) => insertPetOnce({ draft, once }),
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

interface OnceJob {
  draft: PetDraft
  once: IdempotentCreate
}

function prepare(database: BetterSqlite3.Database) {
  const list = new Map<ListVariant, BetterSqlite3.Statement>(
    LIST_VARIANTS.map((variant) => [variant, database.prepare(listPetsSql(SQLITE, variant))]),
  )
  const insert = database.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')
  const insertOne = (draft: PetDraft): Pet =>
    storedPet(draft, String(insert.run(draft.name, draft.categoryId, draft.status).lastInsertRowid))
  const idempotency = idempotencySql(SQLITE, 'rowid')
  const claim = database.prepare(idempotency.claim)
  const respond = database.prepare(idempotency.respond)
  const find = database.prepare(idempotency.find)
  const expire = database.prepare(idempotency.expire)
  // One transaction (a savepoint when inside a batch): the claim is the first statement and a write,
  // so the write lock is taken (waiting up to busy_timeout) before anything is read, and a duplicate
  // in another process waits for this one's commit, then replays it.
  const insertOnce = database.transaction(({ draft, once }: OnceJob): IdempotentOutcome => {
    const { scope, key, fingerprint, now, expiredBefore } = once
    if (!claim.get(scope, key, fingerprint, now, expiredBefore)) {
      return claimedOutcome(find.get(scope, key) as IdempotencyRecord | undefined, fingerprint)
    }
    const response = once.respond(insertOne(draft))
    respond.run(response.status, response.location, response.body, scope, key)
    expire.run(expiredBefore)
    return { outcome: 'created', response }
  })
  return {
    list,
    find: database.prepare(findPetSql(SQLITE)),
    insertOne,
    insertBatch: database.transaction((drafts: PetDraft[]) => drafts.map(insertOne)),
    insertOnce,
    insertOnceBatch: database.transaction((jobs: OnceJob[]) => jobs.map(insertOnce)),
  }
}
