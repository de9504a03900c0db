// The SQLite statements that write pets: one create, a batch of creates, and a create under an
// Idempotency-Key (claim, insert, stored response, expiry, in one transaction). Run by the writer
// thread (sqlite-writer-thread.ts), or inline for `:memory:` (sqlite-pets.ts).
import type BetterSqlite3 from 'better-sqlite3'
import type { Pet } from '../schemas.js'
import {
  claimedOutcome,
  createdResponse,
  type IdempotencyRecord,
  type IdempotentCreate,
  type IdempotentOutcome,
  idempotencySql,
  overRecordLimit,
  type PetDraft,
  PROBE_WRITE_BYTES,
  probeWriteSql,
  type SqlDialect,
  storedPet,
} from './pets.js'

/** SQLite's spelling of the shared SQL (pets.ts). */
export const SQLITE: SqlDialect = { int64Text: (column) => `cast(pets.${column} as text)`, parameter: () => '?' }

/** One create under an Idempotency-Key. */
export interface OnceJob {
  draft: PetDraft
  once: IdempotentCreate
}

/** The write statements of `database`, prepared now (the tables must exist); each runs synchronously. */
export interface SqliteWrites {
  insertOne(draft: PetDraft): Pet
  /** Many creates in one transaction (one commit, one fsync). */
  insertBatch(drafts: PetDraft[]): Pet[]
  insertOnce(job: OnceJob): IdempotentOutcome
  /** Many idempotent creates in one transaction, each in a savepoint of its own. */
  insertOnceBatch(jobs: OnceJob[]): IdempotentOutcome[]
  /** Deletes at most `limit` records created before `expiredBefore` (ms); how many it deleted. */
  sweep(expiredBefore: number, limit: number): number
  /** The probe write (probeWriteSql), in one transaction, committed. */
  probe(): void
}

/** Prepares the write statements on `database`. Throws the driver's error (no table yet, …). */
export function prepareWrites(database: BetterSqlite3.Database): SqliteWrites {
  const insert = database.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')
  const insertOne = (draft: PetDraft): Pet =>
    storedPet(draft, String(insert.run(draft.name, draft.categoryId, draft.status).lastInsertRowid))
  const idempotency = idempotencySql(SQLITE, 'rowid')
  const claim = database.prepare(idempotency.claim)
  const respond = database.prepare(idempotency.respond)
  const find = database.prepare(idempotency.find)
  const expire = database.prepare(idempotency.expire)
  const sweep = database.prepare(idempotency.sweep)
  const count = database.prepare(idempotency.count).pluck()
  const release = database.prepare(idempotency.release)
  const probeSql = probeWriteSql(SQLITE)
  const probeInsert = database.prepare(probeSql.insert)
  const probeRemove = database.prepare(probeSql.remove)
  const probePayload = 'p'.repeat(PROBE_WRITE_BYTES)
  // One transaction (a savepoint when inside a batch): the claim is the first statement and a write,
  // so the write lock is taken (waiting up to busy_timeout) before anything is read, and a duplicate
  // in another process waits for this one's commit, then replays it.
  const insertOnce = database.transaction(({ draft, once }: OnceJob): IdempotentOutcome => {
    const { scope, key, fingerprint, now, expiredBefore, maxRecords } = once
    if (!claim.get(scope, key, fingerprint, now, expiredBefore)) {
      return claimedOutcome(find.get(scope, key) as IdempotencyRecord | undefined, fingerprint)
    }
    if (overRecordLimit(count.get(scope, maxRecords + 1) as number | bigint, maxRecords)) {
      release.run(scope, key)
      return { outcome: 'limit_reached' }
    }
    const response = createdResponse(once, insertOne(draft))
    respond.run(response.status, response.location, response.body, scope, key)
    expire.run(expiredBefore)
    return { outcome: 'created', response }
  })
  return {
    insertOne,
    insertBatch: database.transaction((drafts: PetDraft[]) => drafts.map(insertOne)),
    insertOnce,
    insertOnceBatch: database.transaction((jobs: OnceJob[]) => jobs.map(insertOnce)),
    sweep: (expiredBefore, limit) => sweep.run(expiredBefore, limit).changes,
    probe: database.transaction(() => {
      probeInsert.run(probePayload)
      probeRemove.run()
    }),
  }
}
