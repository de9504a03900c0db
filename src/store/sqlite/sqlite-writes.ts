// The SQLite writes of pets: one create, a batch of creates, and a create under an Idempotency-Key
// (claim, record limit, insert, keep the pet's id, expiry, in one transaction), group-committed
// (group-commit.ts); and the sweep of expired records and readiness's probe write.
// The one wiring both the writer thread (sqlite-writer-thread.ts) and `:memory:` (sqlite-pets.ts) run.
// It takes the statements Kysely compiled in the main thread (pet-sql.ts) and imports no query
// builder or schema library, so the writer thread does not load them.
import type BetterSqlite3 from 'better-sqlite3'
import { compiledStatement, type StatementText, statementText } from '../compiled-statement.js'
import { claimedOutcome, type IdempotencyRecord, overRecordLimit } from '../idempotency-claim.js'
import type { PetStatements } from '../pet-sql.js'
import type { CreatedPet, IdempotentCreate, IdempotentOutcome, PetDraft } from '../pet-store.js'
import { groupCommit } from './group-commit.js'
import { timedCommit, type WriterCommit } from './sqlite-writer-events.js'

/** The pet statements the writes run. */
const WRITE_STATEMENTS = [
  'insert',
  'find',
  'claim',
  'record',
  'keep',
  'expire',
  'held',
  'evictOldest',
  'sweep',
  'probeInsert',
  'probeRemove',
] as const satisfies ReadonlyArray<keyof PetStatements>

/** The compiled pet statements the SQLite writes run (compilePetStatements('sqlite') holds them). */
export type WriteStatements = Pick<PetStatements, (typeof WRITE_STATEMENTS)[number]>

/** The write statements' SQL text and parameters as plain data, for a worker thread's workerData. */
export type WriteStatementTexts = Record<(typeof WRITE_STATEMENTS)[number], StatementText>

/** The plain data of `statements`' write statements (structured-clone safe): what the writer thread takes. */
export function writeStatementTexts(statements: WriteStatements): WriteStatementTexts {
  return Object.fromEntries(WRITE_STATEMENTS.map((name) => [name, statementText(statements[name])])) as WriteStatementTexts
}

/**
 * The write statements again from their plain data (writeStatementTexts), on the thread that
 * received it; each one's value names are those pet-sql.ts compiled it with.
 */
export function writeStatementsFrom(texts: WriteStatementTexts): WriteStatements {
  return Object.fromEntries(WRITE_STATEMENTS.map((name) => [name, compiledStatement(texts[name])])) as WriteStatements
}

/** One create under an Idempotency-Key. */
export interface OnceJob {
  draft: PetDraft
  once: IdempotentCreate
}

/** The write statements of one connection, prepared (the tables must exist); each runs synchronously. */
export interface SqliteWrites {
  /** One create in its own transaction. */
  insertOne(draft: PetDraft): CreatedPet
  /** Many creates in one transaction (one commit, one fsync). */
  insertBatch(drafts: PetDraft[]): CreatedPet[]
  insertOnce(job: OnceJob): IdempotentOutcome
  /** Many idempotent creates in one transaction, each in a savepoint of its own. */
  insertOnceBatch(jobs: OnceJob[]): IdempotentOutcome[]
  /** Deletes at most `limit` records created before `expiredBefore` (ms); how many it deleted. */
  sweep(expiredBefore: number, limit: number): number
  /** The probe write (pet-sql.ts, `probeInsert` then `probeRemove`), in one transaction, committed. */
  probe(): void
}

/** Prepares the write `statements` (SQLite's) on `database`. Throws the driver's error (no table yet, …). */
export function prepareWrites(database: BetterSqlite3.Database, statements: WriteStatements): SqliteWrites {
  const insert = database.prepare(statements.insert.sql)
  const find = database.prepare<unknown[], { body: string }>(statements.find.sql)
  const claim = database.prepare<unknown[], { claimed: unknown }>(statements.claim.sql)
  const record = database.prepare<unknown[], IdempotencyRecord>(statements.record.sql)
  const keep = database.prepare(statements.keep.sql)
  const expire = database.prepare(statements.expire.sql)
  const held = database.prepare<unknown[], { records: number | bigint }>(statements.held.sql)
  const evictOldest = database.prepare(statements.evictOldest.sql)
  const sweep = database.prepare(statements.sweep.sql)
  const probeInsert = database.prepare(statements.probeInsert.sql)
  const probeRemove = database.prepare(statements.probeRemove.sql)
  // Inside the create's transaction: the row, then its body rendered before the commit, so the 201
  // needs no read after it (pet-store.ts, CreatedPet).
  const insertRow = (draft: PetDraft): CreatedPet => {
    const id = insert.run(...statements.insert.bind(draft)).lastInsertRowid
    const body = find.get(...statements.find.bind({ id }))?.body
    if (body === undefined) throw new Error(`pet ${id} not found right after its insert`)
    return { id: String(id), body }
  }
  // One transaction (a savepoint when inside a batch): the claim is the first statement and a write,
  // so the write lock is taken (waiting up to busy_timeout) before anything is read, and a duplicate
  // in another process waits for this one's commit, then replays it.
  const insertOnce = database.transaction(({ draft, once }: OnceJob): IdempotentOutcome => {
    if (!claim.get(...statements.claim.bind(once))) {
      return claimedOutcome(record.get(...statements.record.bind(once)), once.fingerprint)
    }
    const evicted =
      overRecordLimit(held.get(...statements.held.bind(once))?.records, once.maxRecords) &&
      evictOldest.run(...statements.evictOldest.bind(once)).changes > 0
    const pet = insertRow(draft)
    keep.run(...statements.keep.bind({ petId: pet.id, scope: once.scope, key: once.key }))
    expire.run(...statements.expire.bind(once))
    return { outcome: 'created', pet, evicted }
  })
  return {
    insertOne: database.transaction(insertRow),
    insertBatch: database.transaction((drafts: PetDraft[]) => drafts.map(insertRow)),
    insertOnce,
    insertOnceBatch: database.transaction((jobs: OnceJob[]) => jobs.map((job) => insertOnce(job))),
    sweep: (expiredBefore, limit) => sweep.run(...statements.sweep.bind({ expiredBefore, limit })).changes,
    probe: database.transaction(() => {
      probeInsert.run(...statements.probeInsert.bind({}))
      probeRemove.run(...statements.probeRemove.bind({}))
    }),
  }
}

/**
 * Group-committed creates: each resolves after the commit holding its row; rejects with the driver's
 * error. And the writes that run alone, between group commits: a sweep batch, the probe write.
 */
export interface Inserters {
  insertPet(draft: PetDraft): Promise<CreatedPet>
  insertPetOnce(job: OnceJob): Promise<IdempotentOutcome>
  /** Deletes at most `limit` expired records (created before `expiredBefore`, ms) at once; how many it deleted. */
  sweep(expiredBefore: number, limit: number): Promise<number>
  /** The probe write, committed. */
  probe(): Promise<void>
}

/**
 * Group-committed creates over the writes `prepare` returns, prepared on the first create (after
 * migrations made the tables) and again after it threw (the table may not exist yet, the file may
 * be unreachable): every failure is one create's answer. With `report`, each create transaction's
 * duration and rows are reported once it committed (sqlite-writer-events.ts; the writer thread's
 * commit metrics).
 */
export function createInserters(prepare: () => SqliteWrites, report?: (commit: WriterCommit) => void): Inserters {
  let writes: SqliteWrites | undefined
  const ready = () => {
    writes ??= report ? timedWrites(prepare(), report) : prepare()
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
    sweep: async (expiredBefore, limit) => ready().sweep(expiredBefore, limit),
    probe: async () => ready().probe(),
  }
}

// `writes` with each create transaction (one call = one commit) timed: a call from inside another
// (insertOne in a batch, insertOnce in its savepoint) goes through the closures, not these, so each
// commit is reported once.
function timedWrites(writes: SqliteWrites, report: (commit: WriterCommit) => void): SqliteWrites {
  const many = (items: unknown[]) => items.length
  const one = () => 1
  return {
    ...writes,
    insertOne: timedCommit(writes.insertOne, one, report),
    insertBatch: timedCommit(writes.insertBatch, many, report),
    insertOnce: timedCommit(writes.insertOnce, one, report),
    insertOnceBatch: timedCommit(writes.insertOnceBatch, many, report),
  }
}
