// Pets on PostgreSQL: the compiled statements of pet-sql.ts through the pg pool. The database returns
// plain rows (int8 columns as decimal text; reads in array row mode) and this instance writes their JSON
// (pet-json.ts): rendering is work the instances, which scale out, do instead of the one database.
// Reads (a page, a pet) and plain creates are named, so each connection parses and plans them once,
// until a pooler in front shows it does not keep named statements; then they are unnamed too
// (namedStatements). A transaction's statements are unnamed (text and values).
import { createHash } from 'node:crypto'
import type pg from 'pg'
import { claimedOutcome, type IdempotencyRecord, overRecordLimit } from '../idempotency-claim.js'
import { PET_MEMBERS, type PetMember } from '../pet-columns.js'
import { PET_ROW_ID, type PetRow, petJson, petsJson } from '../pet-json.js'
import { compilePetStatements, listVariant } from '../pet-sql.js'
import type { CreatedPet, IdempotentCreate, IdempotentOutcome, PetDraft, PetStore } from '../pet-store.js'
import { boundedQuery, onConnection, type Statement } from './bounded-statements.js'
import { positionOf, type ReadRouting, type ServerRead } from './read-routing.js'
import { withName } from './statement-names.js'

const STATEMENTS = compilePetStatements('postgres')

/**
 * SQLSTATEs of a named statement the server connection does not have (26000
 * invalid_sql_statement_name) or already has (42P05 duplicate_prepared_statement): what a pooler
 * that hands each transaction any server connection (PgBouncer's transaction pooling, before 1.21
 * or without `max_prepared_statements`) makes of named statements.
 */
const NAMED_STATEMENT_NOT_KEPT = new Set(['26000', '42P05'])

// A read's columns as the text PostgreSQL sent: a pet row is text and int8 only, and int8 stays its
// decimal digits (PetRow). pg's own int8 parser returns the same string, after a regular-expression
// test of every value: 3-4 % of a 100-pet page's CPU (docs/benchmarks.md).
const asSent = (value: string) => value
const AS_SENT = { getTypeParser: () => asSent } as unknown as pg.CustomTypesConfig

/** A statement with its prepared statement's name (statement-names.ts). */
interface NamedStatement {
  readonly name: string
  readonly sql: string
}

/** What a read adds to pg's query config: rows in array mode, each column as sent. */
const READ_OPTIONS: Pick<Statement, 'rowMode' | 'types'> = { rowMode: 'array', types: AS_SENT }

/** The fields of a statement's pg config that no execution changes, with and without its name, for the options they were made with. */
interface FixedConfig {
  readonly options: object | undefined
  readonly named: Statement
  readonly unnamed: Statement
}

// pg copies every config it is given, field by field through their property descriptors (its
// cloneQueryConfig): 10 µs of a profiled get by id for a read's five fields, 6 for its values
// alone. The copy keeps the prototype, so the fields that never change live on frozen prototypes
// made once per statement (named and unnamed) and an execution's config holds its values alone.
// Whatever copies a config with a spread loses those fields: tracing's pg instrumentation does, but
// only with `addSqlCommenterCommentToQueries`, which tracing.ts leaves off.
function execution(fixed: Statement, values: unknown[]): Statement {
  const config: Statement = Object.create(fixed)
  config.values = values
  return config
}

/**
 * Runs a named statement with `values` (and, for reads, pg's row options: one object for every run,
 * READ_OPTIONS, since a statement's config is made again whenever its options object changes),
 * resolving to pg's result.
 */
export type NamedRunner = <R extends pg.QueryResultRow>(
  statement: NamedStatement,
  values: unknown[],
  options?: Pick<Statement, 'rowMode' | 'types'>,
) => Promise<pg.QueryResult<R>>

/**
 * Runs statements outside a transaction on `pool` as named statements: an unnamed one is parsed
 * and planned at every execution (on this machine 268 µs against 142 µs a round trip for getPet,
 * docs/benchmarks.md). A name is the hash of its SQL text, so a server connection that has it has
 * this very statement, whichever instance or release prepared it. The first answer showing that a
 * pooler does not keep them (NAMED_STATEMENT_NOT_KEPT) turns names off for good, calls `onNotKept`,
 * and sends that statement again unnamed: both errors come before it executes (at Parse or Bind),
 * so even a create is safe to send again. A transaction's statements stay unnamed: a failed one
 * would abort it.
 */
export function namedStatements(pool: pg.Pool, timeoutMs: number, onNotKept: () => void): NamedRunner {
  let named = true
  const fixed = new WeakMap<NamedStatement, FixedConfig>()
  const fixedOf = (statement: NamedStatement, options: object | undefined): FixedConfig => {
    let config = fixed.get(statement)
    if (config === undefined || config.options !== options) {
      const text = { text: statement.sql, ...options }
      config = { options, named: Object.freeze({ name: statement.name, ...text }), unnamed: Object.freeze(text) }
      fixed.set(statement, config)
    }
    return config
  }
  return async (statement, values, options) => {
    const config = fixedOf(statement, options)
    if (named) {
      try {
        return await boundedQuery(pool, execution(config.named, values), timeoutMs)
      } catch (error) {
        if (!NAMED_STATEMENT_NOT_KEPT.has((error as { code?: string }).code ?? '')) throw error
        if (named) onNotKept()
        named = false
      }
    }
    return boundedQuery(pool, execution(config.unnamed, values), timeoutMs)
  }
}

/** The reads of `run`: rows in array mode, each column as sent. */
export function namedReads(run: NamedRunner): ServerRead {
  return async (statement, values) => (await run<PetRow>(statement, values, READ_OPTIONS)).rows
}

const INSERT = withName(STATEMENTS.insert)
const READS = {
  list: new Map([...STATEMENTS.list].map(([variant, statement]) => [variant, withName(statement)])),
  find: withName(STATEMENTS.find),
}

// pg sends a bigint parameter only as text.
const text = (value: bigint | string) => String(value)

/**
 * The transaction-scoped advisory lock of one (API key, Idempotency-Key): a signed 64-bit number
 * from its SHA-256, as decimal text. Two keys sharing one only answer each other 409 for a moment.
 */
export function idempotencyLock(scope: string, key: string): string {
  return createHash('sha256').update(`${scope}\n${key}`).digest().readBigInt64BE(0).toString()
}

/** One statement: its text and values, resolving to pg's result. */
type Query = <R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>

/**
 * Runs `work` on one connection checked out of `pool`, every statement within `timeoutMs` (ms) of
 * the checkout in all (bounded-statements.ts, counted down). Resolves or rejects as `work` does; on
 * a rejection the connection is discarded, not returned to the pool, so the server rolls back a
 * transaction left open on it (and a pooler drops a statement still queued for it).
 */
function onOneConnection<T>(pool: pg.Pool, timeoutMs: number, work: (query: Query) => Promise<T>): Promise<T> {
  return onConnection(pool, (connection) => {
    const deadline = Date.now() + timeoutMs
    return work((text, values) => connection.query({ text, values }, Math.max(1, deadline - Date.now())))
  })
}

/**
 * createPet with an Idempotency-Key. First a few expired records go, in a statement of their own
 * (their counts' row locks end with it). Then one transaction: take the key's advisory lock without
 * waiting (held by another transaction: `in_flight`, the 409; a unique-index conflict would instead
 * wait for that transaction), claim the key (a new record also locks the scope's count, pet-sql.ts
 * `held`, until commit), past the scope's record limit delete its oldest record, insert the pet,
 * keep its id, commit.
 */
async function insertPetOnce(query: Query, draft: PetDraft, once: IdempotentCreate): Promise<IdempotentOutcome> {
  await query(STATEMENTS.expire.sql, STATEMENTS.expire.bind(once))
  await query('begin')
  const locked = await query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1::bigint) as locked', [
    idempotencyLock(once.scope, once.key),
  ])
  if (!locked.rows[0]?.locked) {
    await query('rollback')
    return { outcome: 'in_flight' }
  }
  const claim = await query(STATEMENTS.claim.sql, STATEMENTS.claim.bind(once))
  if (claim.rowCount === 0) {
    const found = await query<IdempotencyRecord>(STATEMENTS.record.sql, STATEMENTS.record.bind(once))
    await query('rollback')
    return claimedOutcome(found.rows[0], once.fingerprint)
  }
  const held = await query<{ records: string }>(STATEMENTS.held.sql, STATEMENTS.held.bind(once))
  const evicted =
    overRecordLimit(held.rows[0]?.records, once.maxRecords) &&
    ((await query(STATEMENTS.evictOldest.sql, STATEMENTS.evictOldest.bind(once))).rowCount ?? 0) > 0
  const pet = await insert((values) => query(STATEMENTS.insert.sql, values), draft)
  await query(STATEMENTS.keep.sql, STATEMENTS.keep.bind({ petId: pet.id, scope: once.scope, key: once.key }))
  await query('commit')
  return { outcome: 'created', pet, evicted }
}

/** A pet's row, by member, as the insert returns it. */
type InsertedRow = Record<PetMember, string | null>

/** Inserts `draft` with `run` (the insert statement, given its values), resolving to the new pet. */
async function insert(run: (values: unknown[]) => Promise<pg.QueryResult<InsertedRow>>, draft: PetDraft): Promise<CreatedPet> {
  const { rows } = await run(STATEMENTS.insert.bind({ ...draft, categoryId: text(draft.categoryId) }))
  const row = rows[0]
  if (!row) throw new Error('insert into pets returned no row')
  return { id: row.id as string, body: petJson(PET_MEMBERS.map((member) => row[member])) }
}

/** Readiness's probe write: insert and delete the probe row (pet-sql.ts) in one committed transaction. */
async function probeWrite(query: Query): Promise<void> {
  await query('begin')
  await query(STATEMENTS.probeInsert.sql, STATEMENTS.probeInsert.bind({}))
  await query(STATEMENTS.probeRemove.sql, STATEMENTS.probeRemove.bind({}))
  await query('commit')
}

/**
 * A PetStore over a pg pool. Rejects with the driver's error as raised (store/index.ts classifies
 * it). A statement, or a transaction (an Idempotency-Key create, the probe write) in all, takes at
 * most `timeoutMs` (ms) from its connection's checkout (bounded-statements.ts). Reads and plain
 * creates go through `named` (namedStatements, on `pool`); with `routed` (DATABASE_REPLICA_URLS),
 * reads go through it to the replicas (read-routing.ts) instead.
 */
export function postgresPetStore(pool: pg.Pool, timeoutMs: number, named: NamedRunner, routed?: ReadRouting['read']): PetStore {
  const read = routed ?? namedReads(named)
  const anyConnection: Query = (text, values) => boundedQuery(pool, { text, values }, timeoutMs)
  return {
    // A plain create is one autocommit statement on whichever pool connection is free.
    insertPet: (draft) => insert((values) => named(INSERT, values), draft),
    listPets: async (query) => {
      const statement = READS.list.get(listVariant(query))
      if (!statement) throw new Error('listPets: no statement')
      // One row past the page: its presence is the next page's.
      const values = statement.bind({
        ...query,
        limit: query.limit + 1,
        afterId: query.afterId === undefined ? undefined : text(query.afterId),
      })
      const rows = await read(statement, values, query.atLeast)
      const count = Math.min(rows.length, query.limit)
      const last = rows[count - 1]
      return {
        json: petsJson(rows, count),
        ids: rows
          .slice(0, count)
          .map((row) => row[PET_ROW_ID])
          .join(','),
        lastId: last?.[PET_ROW_ID] ?? undefined,
        more: rows.length > query.limit,
        position: routed === undefined ? undefined : positionOf(rows[0]),
      }
    },
    findPet: async (id, atLeast) => {
      const row = (await read(READS.find, READS.find.bind({ id: text(id) }), atLeast))[0]
      return row === undefined ? undefined : petJson(row)
    },
    insertPetOnce: (draft, once) => onOneConnection(pool, timeoutMs, (query) => insertPetOnce(query, draft, once)),
    // One bounded statement in its own transaction; `for update skip locked` leaves rows that
    // instances sweeping at the same time, or a create taking over an expired key, hold.
    deleteExpiredIdempotencyRecords: async (expiredBefore, limit) =>
      (await anyConnection(STATEMENTS.sweep.sql, STATEMENTS.sweep.bind({ expiredBefore, limit }))).rowCount ?? 0,
    probeWrite: () => onOneConnection(pool, timeoutMs, probeWrite),
  }
}
