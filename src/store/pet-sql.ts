// The SQL of every pet statement on the request path (and of the idempotency sweep and readiness's
// probe write), built once with Kysely from the Pet schema's members (pet-columns.ts) and compiled
// for the store's dialect. Where a body is made follows where work is cheapest: SQLite, inside the
// process, renders the response JSON itself (a page is one statement whose value is the Pets body,
// a pet one whose value is the Pet body, the members in the schema's order, int64 as its exact
// digits); PostgreSQL, the one part of a fleet that does not scale out, returns plain rows of the
// members, which the instance renders (pet-json.ts).
import {
  type Compilable,
  DummyDriver,
  type Insertable,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type RawBuilder,
  type SelectQueryBuilder,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  sql,
} from 'kysely'
import { NEW_PET_MEMBERS, type NewPetMember } from '../schemas.js'
import { type CompiledStatement, compiledStatement } from './compiled-statement.js'
import { PET_COLUMNS, PET_MEMBERS } from './pet-columns.js'
import type { PetPageQuery } from './pet-store.js'
import type { Database, PetsTable } from './tables.js'

/** The two SQL dialects the store speaks. */
export type SqlDialect = 'sqlite' | 'postgres'

// A named stand-in for a value, put where the query takes one; compile() turns each into the
// `{ slot }` of its placeholder (compiled-statement.ts), every other parameter into a fixed `{ value }`.
class Slot<N extends string> {
  constructor(readonly name: N) {}
}
// Typed `any` as Kysely's own `sql.val` is: a slot stands wherever a value of the column's type may.
const slot = <N extends string>(name: N): RawBuilder<any> => sql`${new Slot(name)}`

function compile<N extends string>(query: Compilable): CompiledStatement<N> {
  const compiled = query.compile()
  return compiledStatement<N>({
    sql: compiled.sql,
    parameters: compiled.parameters.map((parameter) =>
      parameter instanceof Slot ? { slot: parameter.name } : { value: parameter },
    ),
  })
}

// SQLite's JSON of a row of Pet members (a from-item named `alias`): json_object writes the compact
// form JSON.stringify writes.
const sqliteObject = (alias: string) =>
  sql<string>`json_object(${sql.join(PET_MEMBERS.flatMap((member) => [sql.lit(member), sql.ref(`${alias}.${member}`)]))})`
// In the page subquery's order, as Kysely's jsonArrayFrom does: SQLite reads the ordered subquery as
// a co-routine, and an `order by` inside the aggregate would sort the rows again.
const sqliteArray = (alias: string) => sql<string>`json_group_array(${sqliteObject(alias)})`

// SQLite's planner reads the value bound to a LIMIT, and to a comparison with an indexed column (in
// builds with STAT4, as better-sqlite3's), and then prepares the statement again whenever a new value
// is bound: on every execution (15-20 µs a page, docs/benchmarks.md). Cast, the value is an expression
// the plan does not read; these statements have one plan whatever the value (an index walk in id
// order). PostgreSQL needs none: it does not prepare a statement again for a new value (postgres-pets.ts).
function unplanned<N extends string>(dialect: SqlDialect, name: N, type: 'integer' | 'text'): RawBuilder<any> {
  return dialect === 'sqlite' ? sql`cast(${new Slot(name)} as ${sql.raw(type)})` : slot(name)
}

/** The Pet members as selections from `pets`, each aliased by its member name, in the schema's order. */
function petSelection() {
  return PET_MEMBERS.map((member) => sql.ref(`pets.${PET_COLUMNS[member]}`).as(member))
}

/** The four listPets statements: with or without a status filter, first page or after a cursor. */
export type ListVariant = `${'all' | 'status'}-${'first' | 'after'}`
/** The listPets variants, for compiling them all up front. */
const LIST_VARIANTS: readonly ListVariant[] = ['all-first', 'all-after', 'status-first', 'status-after']

/** The listPets variant of a page query. */
export function listVariant(query: PetPageQuery): ListVariant {
  return `${query.status === undefined ? 'all' : 'status'}-${query.afterId === undefined ? 'first' : 'after'}`
}

/** The values a page statement takes (`status` and `afterId` only in the variants that filter on them). */
type PageValue = 'limit' | 'status' | 'afterId'

/**
 * The row of an SQLite page statement: `body`, the Pets JSON of at most `limit` pets; `ids`, their
 * ids in order, comma-separated (null when empty); `lastId`, the last one's id (null when empty);
 * `more`, whether a pet with a larger id passes the same filter.
 */
export interface PageRow {
  body: string
  ids: string | null
  lastId: bigint | null
  more: bigint
}

function pageStatement(db: Kysely<Database>, dialect: SqlDialect, variant: ListVariant) {
  const byStatus = variant.startsWith('status')
  const after = variant.endsWith('after')
  // The keyset: this filter, ordered by id.
  const keyset = <Q extends SelectQueryBuilder<Database, 'pets', object>>(query: Q) =>
    query
      .$if(byStatus, (q) => q.where('pets.status', '=', unplanned(dialect, 'status', 'text')))
      .$if(after, (q) => q.where('pets.id', '>', slot('afterId')))
      .orderBy('pets.id') as Q
  const page = keyset(db.selectFrom('pets').select(petSelection())).limit(unplanned(dialect, 'limit', 'integer'))
  // PostgreSQL: the rows themselves; the store asks for one row past the page, which tells whether
  // a next page exists without a second walk of the index.
  if (dialect === 'postgres') return page
  // SQLite: the page is its first `limit` rows; a next page exists when it has a row past them (an
  // index walk of `limit` entries, no row read).
  return db.selectFrom(page.as('page')).select([
    sqliteArray('page').as('body'),
    sql<string | null>`group_concat(${sql.ref('page.id')})`.as('ids'),
    sql<bigint | null>`max(${sql.ref('page.id')})`.as('lastId'),
    (eb) =>
      eb
        .exists(
          keyset(db.selectFrom('pets').select(sql<number>`1`.as('one')))
            .limit(1)
            .offset(slot('limit')),
        )
        .as('more'),
  ])
}

function findStatement(db: Kysely<Database>, dialect: SqlDialect) {
  const pet = db.selectFrom('pets').select(petSelection()).where('pets.id', '=', slot('id'))
  return dialect === 'postgres' ? pet : db.selectFrom(pet.as('pet')).select(sqliteObject('pet').as('body'))
}

/** The request path's pet statements for one dialect, compiled once (the store prepares them once per connection). */
export interface PetStatements {
  /** One page per variant. SQLite's row: PageRow. PostgreSQL's rows: the page's pets, each a row of Pet members (pet-json.ts PetRow), at most `limit`. */
  list: ReadonlyMap<ListVariant, CompiledStatement<PageValue>>
  /** The pet of one id, or no row. SQLite's row: `{ body }`, its Pet JSON. PostgreSQL's: a row of Pet members. */
  find: CompiledStatement<'id'>
  /**
   * Inserts one pet. PostgreSQL's row: the new pet's row of Pet members, returned by the same
   * statement (SQLite: the run's lastInsertRowid; its writes render with `find` in the same transaction).
   */
  insert: CompiledStatement<NewPetMember>
  /** Claims an Idempotency-Key (new, or expired before `expiredBefore`); a row only when this request now owns it. */
  claim: CompiledStatement<'scope' | 'key' | 'fingerprint' | 'now' | 'expiredBefore'>
  /** A claimed key's record: `{ request_hash, pet_id }`. */
  record: CompiledStatement<'scope' | 'key'>
  /** Fills in the created pet's id of a claimed key. */
  keep: CompiledStatement<'petId' | 'scope' | 'key'>
  /** Deletes at most EXPIRED_DELETE_BATCH records created before `expiredBefore`. */
  expire: CompiledStatement<'expiredBefore'>
  /** The background sweep's bounded batch: deletes at most `limit` records created before `expiredBefore` (idempotency-sweeper.ts). */
  sweep: CompiledStatement<'expiredBefore' | 'limit'>
  /**
   * `{ records }`: the scope's records, read from the count triggers keep (migration 0007): one
   * primary-key lookup, whatever the limit. No row: none yet. On PostgreSQL, read after the claim
   * inserted a record, it is exact: the insert trigger's row lock holds off the scope's other new
   * records until this transaction ends.
   */
  held: CompiledStatement<'scope'>
  /**
   * Deletes the scope's oldest record other than `key`'s (the one just claimed): makes room when the
   * claim took the scope past its limit, so storage per API key stays bounded and no create is refused.
   */
  evictOldest: CompiledStatement<'scope' | 'key'>
  /**
   * Readiness's probe write, run with `probeRemove` in one transaction: adds a `service_secrets` row
   * whose value is PROBE_WRITE_BYTES of text (a fixed value of the statement); the commit still
   * writes every page touched.
   */
  probeInsert: CompiledStatement<never>
  /** Deletes the probe's row again. */
  probeRemove: CompiledStatement<never>
}

/**
 * Bytes the probe write puts in its row: more than any create writes, so storage that takes the
 * probe's commit takes a create's; the few KB a failed commit leaves allocated cannot absorb it.
 */
const PROBE_WRITE_BYTES = 65_536

/** The `service_secrets` name of the probe write's row (never a real secret's name). */
const PROBE_ROW = 'write-probe'

/** Most expired idempotency records one idempotent create deletes: bounded work per request. */
const EXPIRED_DELETE_BATCH = 16

// Kysely without a connection: it only compiles (Kysely's "splitting build, compile and execute" recipe).
function compiler(dialect: SqlDialect): Kysely<Database> {
  const postgres = dialect === 'postgres'
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => (postgres ? new PostgresAdapter() : new SqliteAdapter()),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => (postgres ? new PostgresIntrospector(db) : new SqliteIntrospector(db)),
      createQueryCompiler: () => (postgres ? new PostgresQueryCompiler() : new SqliteQueryCompiler()),
    },
  })
}

/** Compiles every pet statement for `dialect`: once per process (the stores prepare them once per connection). */
export function compilePetStatements(dialect: SqlDialect): PetStatements {
  const db = compiler(dialect)
  // Every NewPet member into its column, each value a slot named by its member: a new member needs no edit here.
  const newPet = Object.fromEntries(NEW_PET_MEMBERS.map((member) => [PET_COLUMNS[member], slot(member)])) as Insertable<PetsTable>
  return {
    list: new Map(LIST_VARIANTS.map((variant) => [variant, compile<PageValue>(pageStatement(db, dialect, variant))])),
    find: compile(findStatement(db, dialect)),
    // SQLite reads the new id from the run's lastInsertRowid instead of RETURNING: better-sqlite3's
    // get() returns the first RETURNING row and then resets the statement, where an autocommit's
    // failed COMMIT (SQLITE_FULL) would go unreported; run() steps to the end and throws it.
    insert: compile(
      dialect === 'postgres'
        ? db.insertInto('pets').values(newPet).returning(petSelection())
        : db.insertInto('pets').values(newPet),
    ),
    ...compileIdempotencyStatements(db, dialect),
    probeInsert: compile(db.insertInto('service_secrets').values({ name: PROBE_ROW, value: 'p'.repeat(PROBE_WRITE_BYTES) })),
    probeRemove: compile(db.deleteFrom('service_secrets').where('name', '=', PROBE_ROW)),
  }
}

// Claims an Idempotency-Key: inserts its record, or takes over an expired one; returns a row only when this request now owns it.
function claimStatement(db: Kysely<Database>) {
  return db
    .insertInto('idempotency_keys')
    .values({
      api_key_id: slot('scope'),
      idempotency_key: slot('key'),
      request_hash: slot('fingerprint'),
      created_at: slot('now'),
      pet_id: null,
    })
    .onConflict((conflict) =>
      conflict
        .columns(['api_key_id', 'idempotency_key'])
        .doUpdateSet((eb) => ({
          request_hash: eb.ref('excluded.request_hash'),
          created_at: eb.ref('excluded.created_at'),
          pet_id: null,
        }))
        .where('idempotency_keys.created_at', '<', slot('expiredBefore')),
    )
    .returning(sql<number>`1`.as('claimed'))
}

// The Idempotency-Key statements of PetStatements: claim, record, keep, expire, sweep, held, evictOldest.
function compileIdempotencyStatements(
  db: Kysely<Database>,
  dialect: SqlDialect,
): Pick<PetStatements, 'claim' | 'record' | 'keep' | 'expire' | 'sweep' | 'held' | 'evictOldest'> {
  const where = { scope: slot('scope'), key: slot('key') }
  return {
    claim: compile(claimStatement(db)),
    record: compile(
      db
        .selectFrom('idempotency_keys')
        .select(['request_hash', 'pet_id'])
        .where('api_key_id', '=', where.scope)
        .where('idempotency_key', '=', where.key),
    ),
    keep: compile(
      db
        .updateTable('idempotency_keys')
        .set({ pet_id: slot('petId') })
        .where('api_key_id', '=', where.scope)
        .where('idempotency_key', '=', where.key),
    ),
    expire: compile(deleteExpired(db, dialect, EXPIRED_DELETE_BATCH)),
    sweep: compile(deleteExpired(db, dialect, unplanned(dialect, 'limit', 'integer'))),
    held: compile(db.selectFrom('idempotency_key_counts').select('records').where('api_key_id', '=', where.scope)),
    evictOldest: compile(
      db.deleteFrom('idempotency_keys').where(
        sql<boolean>`(api_key_id, idempotency_key) in ${db
          .selectFrom('idempotency_keys')
          .select(['api_key_id', 'idempotency_key'])
          .where('api_key_id', '=', where.scope)
          .where('idempotency_key', '<>', where.key)
          // Exactly the order of idempotency_keys_eviction_order (migration 0008): one index probe.
          .orderBy('created_at')
          .orderBy('idempotency_key')
          .limit(1)
          // PostgreSQL: a row another transaction holds is left to it (a concurrent create evicts the next).
          .$if(dialect === 'postgres', (q) => q.forUpdate().skipLocked())}`,
      ),
    ),
  }
}

// At most `limit` records created before `expiredBefore`, deleted by their primary key.
function deleteExpired(db: Kysely<Database>, dialect: SqlDialect, limit: number | RawBuilder<any>) {
  return db.deleteFrom('idempotency_keys').where(
    sql<boolean>`(api_key_id, idempotency_key) in ${db
      .selectFrom('idempotency_keys')
      .select(['api_key_id', 'idempotency_key'])
      .where('created_at', '<', slot('expiredBefore'))
      .limit(limit)
      // PostgreSQL: rows another transaction holds are left to it, so two creates (or sweeps) never wait on each other's expired rows.
      .$if(dialect === 'postgres', (q) => q.forUpdate().skipLocked())}`,
  )
}
