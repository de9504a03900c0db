// Schema migrations: Kysely's Migrator over the static list of migrations/index.ts, and the rule that lets a release
// start on a database a newer release has migrated (docs/deploying.md, "Upgrades and rollbacks").
// Every run holds a lock for its whole length, so N instances starting at once migrate exactly once:
// on PostgreSQL Kysely's, a transaction-scoped advisory lock (postgres-migration-lock.ts); on SQLite
// the database's write lock (migrateSqlite below).
import { type Kysely, Migrator, SqliteAdapter, sql } from 'kysely'
import { MIGRATIONS } from './migrations/index.js'

/** Kysely's table of applied migrations (name, ISO timestamp). */
const MIGRATION_TABLE = 'kysely_migration'

/** What a migration run found: the migrations it applied, and those applied by a newer release. */
export interface MigrationReport {
  /** Names applied by this run, in order (empty when up to date). */
  applied: string[]
  /** Names the database has applied that this release does not know, all after every known one. */
  newer: string[]
}

/**
 * Applies every pending migration in order. A database migrated by a newer release (its extra
 * migrations all listed after every one this release knows) is left as it is and reported in
 * `newer`. Throws when the database holds migrations this release does not
 * know and a known one is missing or out of order; throws the failing migration's error, naming
 * it, after its transaction rolled back.
 */
export async function migrateToLatest(db: Kysely<any>): Promise<MigrationReport> {
  return db.getExecutor().adapter instanceof SqliteAdapter ? migrateSqlite(db) : migrate(db)
}

/**
 * How long (ms) an SQLite migration run waits for another process's run to end: the longest
 * migration took 86 s at 1,000,000 records (docs/deploying.md); the connection's own busy timeout
 * (5 s, sqlite-connection.ts) would fail a start that merely came second.
 */
const SQLITE_MIGRATION_WAIT_MS = 600_000

// Kysely's SQLite adapter takes no lock and runs each statement of a migration on its own: four
// processes starting on one new file at once failed with "table already exists" in 5 of 8 tries,
// and a process killed mid-run would leave half a migration applied. One BEGIN IMMEDIATE around the
// whole run, on the store's one Kysely connection, takes the write lock first: another process
// waits for it and then finds the migrations applied, and a failure or a kill undoes every
// statement of the run.
async function migrateSqlite(db: Kysely<any>): Promise<MigrationReport> {
  const { rows } = await sql<{ timeout: number | bigint }>`pragma busy_timeout`.execute(db)
  await sql.raw(`pragma busy_timeout = ${SQLITE_MIGRATION_WAIT_MS}`).execute(db)
  try {
    await sql`begin immediate`.execute(db)
  } finally {
    await sql.raw(`pragma busy_timeout = ${Number(rows[0]?.timeout ?? 0)}`).execute(db)
  }
  try {
    const report = await migrate(db)
    await sql`commit`.execute(db)
    return report
  } catch (error) {
    // SQLite may have rolled back already (a full disk, an I/O error): the cause is `error`, not that.
    await sql`rollback`.execute(db).catch(() => {})
    throw error
  }
}

async function migrate(db: Kysely<any>): Promise<MigrationReport> {
  const newer = checkNewerSchema(await appliedMigrations(db), Object.keys(MIGRATIONS).sort())
  if (newer.length > 0) return { applied: [], newer }
  const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } })
  const { error, results = [] } = await migrator.migrateToLatest()
  const failed = results.find((result) => result.status === 'Error')
  if (error && failed) {
    throw new Error(`migration ${failed.migrationName} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    })
  }
  if (error) throw error // before any migration ran: connecting, reading the migration tables, or their order
  return { applied: results.filter((result) => result.status === 'Success').map((result) => result.migrationName), newer: [] }
}

/**
 * The applied migrations not in `known` (sorted), when the database is a newer release's: every
 * known one applied, in order, before them. Empty when there are none (Kysely's migrator then
 * applies what is pending and checks the order). Throws an Error naming the missing or misplaced migration otherwise.
 */
export function checkNewerSchema(applied: string[], known: string[]): string[] {
  const unknown = applied.filter((name) => !known.includes(name))
  if (unknown.length === 0) return []
  const missing = known.filter((name) => !applied.includes(name))
  if (missing.length > 0) {
    throw new Error(
      `the database schema does not match this release: migration ${missing.join(', ')} is not applied, but migrations this release does not know are (${unknown.join(', ')}); refusing to start`,
    )
  }
  const misplaced = applied.slice(0, known.length).findIndex((name, index) => name !== known[index])
  if (misplaced >= 0) {
    throw new Error(
      `the database schema does not match this release: migration ${applied[misplaced]} was applied where ${known[misplaced]} belongs (out of order); refusing to start`,
    )
  }
  return unknown
}

// The applied migrations in the order Kysely's migrator reads them: by timestamp, then by name.
async function appliedMigrations(db: Kysely<any>): Promise<string[]> {
  const tables = await db.introspection.getTables({ withInternalKyselyTables: true })
  if (!tables.some((table) => table.name === MIGRATION_TABLE)) return []
  const { rows } = await sql<{
    name: string
    timestamp: string
  }>`select name, timestamp from ${sql.table(MIGRATION_TABLE)}`.execute(db)
  return rows
    .sort((a, b) =>
      a.timestamp === b.timestamp
        ? a.name.localeCompare(b.name)
        : new Date(a.timestamp).getTime() - new Date(b.timestamp).getTime(),
    )
    .map((row) => row.name)
}
