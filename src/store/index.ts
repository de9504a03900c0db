// The one door to the database: openStore() picks SQLite (better-sqlite3) or PostgreSQL (pg, loaded
// only then: a service on SQLite never holds it in memory), runs
// Kysely for keys, migrations and copy, hands out the narrow PetStore / ApiKeyStore interfaces the
// rest of the app depends on, and classifies every driver error once (unavailable.ts).
import type BetterSqlite3 from 'better-sqlite3'
import { type Dialect, Kysely, type SqliteDatabase, SqliteDialect, sql } from 'kysely'
import type pg from 'pg'
import * as apiKeys from './api-keys.js'
import { type MigrationReport, migrateToLatest } from './migrate.js'
import type { PetStore } from './pet-store.js'
import { boundedKyselyPool, boundedQuery } from './postgres/bounded-statements.js'
import { TransactionLockPostgresDialect } from './postgres/postgres-migration-lock.js'
import { namedReads, namedStatements, postgresPetStore } from './postgres/postgres-pets.js'
import {
  REPLICA_CHECK_TIMEOUT_MS,
  type ReadRouting,
  type ReadStats,
  type ReplicaChange,
  type ReplicaSettings,
  routeReads,
  withWritePositions,
} from './postgres/read-routing.js'
import { loadServiceSecret } from './service-secrets.js'
import { openSqlite } from './sqlite/sqlite-connection.js'
import { sqlitePetStore } from './sqlite/sqlite-pets.js'
import { trackWrites } from './sqlite/write-health.js'
import type { Database } from './tables.js'
import { classifyDriverError, StoreUnavailableError } from './unavailable.js'

export type { ActiveKeyHash, ApiKeyRecord } from './api-keys.js'
export type { CreatedPet, IdempotentOutcome, PetDraft, PetStore, Position } from './pet-store.js'
export type { ReadStats, ReplicaChange, ReplicaSettings } from './postgres/read-routing.js'
export { StoreUnavailableError } from './unavailable.js'

/** Where the data lives: an SQLite file (or `:memory:`), or a PostgreSQL connection string. */
export type DatabaseConfig =
  | { dialect: 'sqlite'; path: string }
  | { dialect: 'postgres'; url: string; poolMax: number; statementTimeoutMs: number }

/** A snapshot of the connection pool (counts). */
export interface PoolStats {
  total: number
  inUse: number
  waiting: number
}

/** Stored API keys (hashes only), for authentication and the `keys` commands. */
export interface ApiKeyStore {
  insertApiKey(key: apiKeys.NewApiKey): Promise<apiKeys.ApiKeyRecord>
  listApiKeys(): Promise<apiKeys.ApiKeyRecord[]>
  listActiveKeyHashes(afterId?: bigint): Promise<apiKeys.ActiveKeyHash[]>
  hasAnyApiKey(): Promise<boolean>
  revokeApiKey(id: bigint, revokedAt: string): Promise<apiKeys.ApiKeyRecord | undefined>
}

/** An open database: its stores, migrations, a readiness probe and close. */
export interface Store {
  readonly dialect: DatabaseConfig['dialect']
  readonly pets: PetStore
  readonly apiKeys: ApiKeyStore
  /**
   * Applies pending migrations; resolves to the names applied and those of a newer release found
   * applied (store/migrate.ts). Rejects when a known migration is missing or out of order.
   */
  migrate(): Promise<MigrationReport>
  /** The key (bytes) that signs listPets cursors and consistency tokens, the same for every instance on this database. */
  loadCursorKey(): Promise<Buffer>
  /**
   * Resolves when the database answers a trivial query and accepts writes (after a create failed as
   * unavailable, until a write succeeds again: write-health.ts); rejects with StoreUnavailableError.
   */
  ping(): Promise<void>
  /** Closes the database (waits for the pool to drain). */
  close(): Promise<void>
  /** PostgreSQL pool connections: open in total, in use, and requests waiting for one. Zeros on SQLite. */
  poolStats(): PoolStats
  /**
   * Whether the database answered the store's last operation: false after one failed as unavailable
   * (StoreUnavailableError) or a PostgreSQL pool lost an idle connection, until one succeeds.
   */
  answering(): boolean
  /** With replicas: reads per server, fall-backs to the primary, each replica's lag; undefined without. */
  readStats(): ReadStats | undefined
  /**
   * Idempotency-Key records this process deleted before they expired, to keep an API key within
   * IDEMPOTENCY_RECORDS_PER_KEY (a retry with such a key would create again).
   */
  idempotencyRecordsEvicted(): number
  /** The Kysely handle, for store-level tools (copy, tests of the schema) only. */
  readonly db: Kysely<Database>
}

/** What openStore reports about a PostgreSQL pool while it runs (nothing on SQLite). */
export interface StoreEvents {
  /** An idle connection failed (a server restart, a dropped connection). */
  poolError?(error: Error): void
  /** A pooler in front does not keep named statements: reads are sent unnamed from now on. */
  namedStatementsNotKept?(): void
  /** A replica entered or left the rotation of reads (read-routing.ts). */
  replicaChanged?(change: ReplicaChange): void
}

/**
 * Opens the database named by `config`; resolves once its connection or pool exists (no query has
 * run yet). With `replicas` (PostgreSQL; only `serve` passes them), listPets and getPet are read
 * from them when they can be (read-routing.ts), and creates resolve to their commit's position. SQLite: the connection of sqlite-connection.ts for reads
 * and Kysely, and a writer thread for creates (sqlite-writer.ts: a commit is on stable storage
 * before the create resolves; concurrent creates share one commit). PostgreSQL: a pg Pool of
 * `poolMax` with a per-statement timeout (ms), which also bounds a migration's lock waits (a
 * transaction-scoped lock: safe behind a transaction pooler); pool errors (a server restart, a dropped connection)
 * are reported to `events.poolError` and never crash the process; `events.namedStatementsNotKept`
 * is called once when a pooler in front does not keep named statements (postgres-pets.ts). Rejects
 * with the driver's error when the SQLite file cannot be opened.
 */
export async function openStore(config: DatabaseConfig, events: StoreEvents = {}, replicas?: ReplicaSettings): Promise<Store> {
  // Whether the database answered: false from a failure classified unavailable, or an idle pool
  // connection lost (a server that stops ends them), until an operation succeeds again.
  let answering = true
  const poolError = (error: Error) => {
    answering = false
    events.poolError?.(error)
  }
  const { dialect, pool, pets, closePets, routing } = await connect(config, { ...events, poolError }, replicas)
  const guard = <A extends unknown[], R>(operation: (...args: A) => Promise<R>): ((...args: A) => Promise<R>) =>
    classified(operation, (ok) => {
      answering = ok
    })
  const db = new Kysely<Database>({ dialect })
  const writes = trackWrites(() => pets.probeWrite())
  let evicted = 0
  const insertPetOnce: PetStore['insertPetOnce'] = async (draft, once) => {
    const outcome = await pets.insertPetOnce(draft, once)
    if (outcome.outcome === 'created' && outcome.evicted) evicted++
    return outcome
  }
  return {
    dialect: config.dialect,
    db,
    pets: {
      insertPet: writes.observe(guard(pets.insertPet)),
      listPets: guard(pets.listPets),
      findPet: guard(pets.findPet),
      insertPetOnce: writes.observe(guard(insertPetOnce)),
      deleteExpiredIdempotencyRecords: guard(pets.deleteExpiredIdempotencyRecords),
      probeWrite: guard(pets.probeWrite),
    },
    apiKeys: {
      insertApiKey: guard((key) => apiKeys.insertApiKey(db, key)),
      listApiKeys: guard(() => apiKeys.listApiKeys(db)),
      listActiveKeyHashes: guard((afterId) => apiKeys.listActiveKeyHashes(db, afterId)),
      hasAnyApiKey: guard(() => apiKeys.hasAnyApiKey(db)),
      revokeApiKey: guard((id, revokedAt) => apiKeys.revokeApiKey(db, id, revokedAt)),
    },
    migrate: guard(() => migrateToLatest(db)),
    loadCursorKey: guard(() => loadServiceSecret(db, 'cursor')),
    ping: guard(async () => {
      await sql`select 1`.execute(db)
      await writes.check()
    }),
    close: async () => {
      await closePets?.()
      await db.destroy()
    },
    idempotencyRecordsEvicted: () => evicted,
    answering: () => answering,
    readStats: () => routing?.stats(),
    poolStats: () =>
      pool
        ? { total: pool.totalCount, inUse: pool.totalCount - pool.idleCount, waiting: pool.waitingCount }
        : { total: 0, inUse: 0, waiting: 0 },
  }
}

/**
 * The client-side bound (ms) on one PostgreSQL statement, or on an Idempotency-Key create's whole
 * transaction: DATABASE_STATEMENT_TIMEOUT_MS plus 3 s. On a direct connection the server's own
 * statement_timeout (57014, which keeps the connection) answers first; behind PgBouncer a statement
 * may wait in its queue for `query_wait_timeout` (2 s in deploy/pgbouncer.ini) and then run for the
 * role's statement_timeout, and both together stay below this, so the service never gives up on a
 * statement that could still commit after its client was told it failed.
 */
function queryTimeoutMs(statementTimeoutMs: number): number {
  return statementTimeoutMs + 3000
}

function ignoreClientError(): void {}

/**
 * `operation` rejecting with its driver error classified (unavailable.ts), telling `outcome` whether
 * the database answered: true when it resolves, false when it rejects as unavailable.
 */
function classified<A extends unknown[], R>(
  operation: (...args: A) => Promise<R>,
  outcome: (answered: boolean) => void,
): (...args: A) => Promise<R> {
  return async (...args) => {
    try {
      const result = await operation(...args)
      outcome(true)
      return result
    } catch (error) {
      const thrown = classifyDriverError(error)
      if (thrown instanceof StoreUnavailableError) outcome(false)
      throw thrown
    }
  }
}

// Kysely runs migrations, keys and copy; the request hot path (pets) runs the statements Kysely
// compiled once (pet-sql.ts) straight on the same connection or pool (sqlite-pets.ts, postgres-pets.ts).
async function connect(
  config: DatabaseConfig,
  events: StoreEvents,
  replicas: ReplicaSettings | undefined,
): Promise<{ dialect: Dialect; pool?: pg.Pool; pets: PetStore; closePets?: () => Promise<void>; routing?: ReadRouting }> {
  if (config.dialect === 'sqlite') {
    const database = openSqlite(config.path)
    const pets = sqlitePetStore(database, config.path)
    return { dialect: new SqliteDialect({ database: withStatementCache(database) }), pets, closePets: pets.close }
  }
  const onPoolError = events.poolError ?? (() => {})
  const onNotKept = events.namedStatementsNotKept ?? (() => {})
  const pool = await postgresPool(config, onPoolError)
  const timeoutMs = queryTimeoutMs(config.statementTimeoutMs)
  const dialect = new TransactionLockPostgresDialect({ pool: boundedKyselyPool(pool, timeoutMs) }, config.statementTimeoutMs)
  const named = namedStatements(pool, timeoutMs, onNotKept)
  if (!replicas || replicas.urls.length === 0) {
    return { dialect, pool, pets: postgresPetStore(pool, timeoutMs, named) }
  }
  // Each server gets one connection of its own for its health checks, so that a busy pool never
  // makes a healthy replica look down or behind; each replica, a pool for reads.
  const checksOn = (url: string) =>
    postgresPool({ ...config, url, poolMax: 1 }, onPoolError, REPLICA_CHECK_TIMEOUT_MS, REPLICA_CHECK_TIMEOUT_MS)
  const primaryChecks = await checksOn(config.url)
  const replicaPools = await Promise.all(
    replicas.urls.map(async (url) => ({
      reads: await postgresPool({ ...config, url }, onPoolError, REPLICA_CHECK_TIMEOUT_MS),
      checks: await checksOn(url),
    })),
  )
  const healthOf = (target: pg.Pool) => async (text: string) =>
    (await boundedQuery(target, { text }, REPLICA_CHECK_TIMEOUT_MS)).rows
  const routing = routeReads(
    { read: namedReads(named), query: healthOf(primaryChecks) },
    replicaPools.map(({ reads, checks }) => ({
      read: namedReads(namedStatements(reads, timeoutMs, onNotKept)),
      query: healthOf(checks),
    })),
    replicas,
    events.replicaChanged,
  )
  const pets = withWritePositions(postgresPetStore(pool, timeoutMs, named, routing.read), routing)
  const closePets = async () => {
    routing.close()
    await Promise.all([primaryChecks.end(), ...replicaPools.flatMap(({ reads, checks }) => [reads.end(), checks.end()])])
  }
  return { dialect, pool, pets, closePets, routing }
}

/** Most prepared SQLite statements kept by SQL text; past it the cache starts over. docs/security.md states it. */
export const STATEMENT_CACHE_ENTRIES = 256

// Kysely prepares every query anew; better-sqlite3 statements are reusable, so they are kept by SQL
// text (the service issues a handful of distinct statements; the cap only bounds the unexpected).
function withStatementCache(database: BetterSqlite3.Database): SqliteDatabase {
  const statements = new Map<string, BetterSqlite3.Statement>()
  return {
    close: () => database.close(),
    prepare(sql) {
      let statement = statements.get(sql)
      if (!statement) {
        if (statements.size >= STATEMENT_CACHE_ENTRIES) statements.clear()
        statement = database.prepare(sql)
        statements.set(sql, statement)
      }
      return statement
    },
  }
}

/**
 * A pg Pool on `config`'s server, its errors reported to `onPoolError`. A connection attempt takes at
 * most `connectTimeoutMs` (a replica's is short: a read it cannot serve goes to the primary), a
 * statement `statementTimeoutMs` on the server, or `queryTimeout` if shorter. The client-side bound
 * is not pg's `query_timeout` but the callers' (postgres/bounded-statements.ts), with `queryTimeout`.
 */
async function postgresPool(
  config: Extract<DatabaseConfig, { dialect: 'postgres' }>,
  onPoolError: (error: Error) => void,
  connectTimeoutMs = config.statementTimeoutMs,
  queryTimeout = queryTimeoutMs(config.statementTimeoutMs),
): Promise<pg.Pool> {
  // Loaded here, not at the top: pg and its dependencies cost about 10 MB of memory.
  const { default: pg } = await import('pg')
  const pool = new pg.Pool({
    connectionString: config.url,
    max: config.poolMax,
    statement_timeout: Math.min(config.statementTimeoutMs, queryTimeout),
    connectionTimeoutMillis: Math.min(config.statementTimeoutMs, connectTimeoutMs),
  })
  // An idle client losing its server emits 'error' on the pool; unhandled, it would kill the process.
  pool.on('error', onPoolError)
  // A checked-out client (a transaction, Kysely's migrations and copy) has no pool listener: its
  // connection ending would be an uncaught 'error' and end the process. The error also reaches the
  // statement in flight, or the next one ("not queryable"), which fails as unavailable, so this
  // listener, attached for the client's whole life, has nothing more to do.
  pool.on('connect', (client) => client.on('error', ignoreClientError))
  return pool
}
