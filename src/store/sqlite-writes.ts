// The SQLite writes of pets: one create, a batch of creates, and a create under an Idempotency-Key
// (claim, insert, keep the pet's id, expiry, in one transaction), group-committed (group-commit.ts).
// The one wiring both the writer thread (sqlite-writer-thread.ts) and `:memory:` (sqlite-pets.ts) run.
import type BetterSqlite3 from 'better-sqlite3'
import type { Int64Text } from '../int64.js'
import { groupCommit } from './group-commit.js'
import { claimedOutcome, type IdempotencyRecord } from './idempotency-claim.js'
import { compilePetStatements } from './pet-sql.js'
import type { IdempotentCreate, IdempotentOutcome, PetDraft } from './pet-store.js'

const STATEMENTS = compilePetStatements('sqlite')

/** One create under an Idempotency-Key. */
export interface OnceJob {
  draft: PetDraft
  once: IdempotentCreate
}

/** The write statements of one connection, prepared (the tables must exist); each runs synchronously. */
export interface SqliteWrites {
  insertOne(draft: PetDraft): Int64Text
  /** Many creates in one transaction (one commit, one fsync). */
  insertBatch(drafts: PetDraft[]): Int64Text[]
  insertOnce(job: OnceJob): IdempotentOutcome
  /** Many idempotent creates in one transaction, each in a savepoint of its own. */
  insertOnceBatch(jobs: OnceJob[]): IdempotentOutcome[]
}

/** Prepares the write statements on `database`. Throws the driver's error (no table yet, …). */
export function prepareWrites(database: BetterSqlite3.Database): SqliteWrites {
  const insert = database.prepare(STATEMENTS.insert.sql)
  const claim = database.prepare<unknown[], { claimed: unknown }>(STATEMENTS.claim.sql)
  const record = database.prepare<unknown[], IdempotencyRecord>(STATEMENTS.record.sql)
  const keep = database.prepare(STATEMENTS.keep.sql)
  const expire = database.prepare(STATEMENTS.expire.sql)
  // run(), which throws a failed autocommit COMMIT (see pet-sql.ts), so an id is never returned for
  // a row that is not on stable storage.
  const insertOne = (draft: PetDraft): Int64Text => String(insert.run(...STATEMENTS.insert.bind(draft)).lastInsertRowid)
  // One transaction (a savepoint when inside a batch): the claim is the first statement and a write,
  // so the write lock is taken (waiting up to busy_timeout) before anything is read, and a duplicate
  // in another process waits for this one's commit, then replays it.
  const insertOnce = database.transaction(({ draft, once }: OnceJob): IdempotentOutcome => {
    if (!claim.get(...STATEMENTS.claim.bind(once))) {
      return claimedOutcome(record.get(...STATEMENTS.record.bind(once)), once.fingerprint)
    }
    const petId = insertOne(draft)
    keep.run(...STATEMENTS.keep.bind({ petId, scope: once.scope, key: once.key }))
    expire.run(...STATEMENTS.expire.bind(once))
    return { outcome: 'created', petId }
  })
  return {
    insertOne,
    insertBatch: database.transaction((drafts: PetDraft[]) => drafts.map(insertOne)),
    insertOnce,
    insertOnceBatch: database.transaction((jobs: OnceJob[]) => jobs.map((job) => insertOnce(job))),
  }
}

/** Group-committed creates: each resolves after the commit holding its row; rejects with the driver's error. */
export interface Inserters {
  insertPet(draft: PetDraft): Promise<Int64Text>
  insertPetOnce(job: OnceJob): Promise<IdempotentOutcome>
}

/**
 * Group-committed creates over the writes `prepare` returns, prepared on the first create (after
 * migrations made the tables) and again after it threw (the table may not exist yet, the file may
 * be unreachable): every failure is one create's answer.
 */
export function createInserters(prepare: () => SqliteWrites): Inserters {
  let writes: SqliteWrites | undefined
  const ready = () => {
    writes ??= prepare()
    return writes
  }
  return {
    insertPet: groupCommit(
      (drafts: PetDraft[]) => ready().insertBatch(drafts),
      (draft) => ready().insertOne(draft),
    ),
    insertPetOnce: groupCommit(
      (jobs: OnceJob[]) => ready().insertOnceBatch(jobs),
      (job) => ready().insertOnce(job),
    ),
  }
}
