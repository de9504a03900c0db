// What a backup may carry into the live database: exactly the schema objects this release's own
// migrations create (their tables, indexes and triggers; nothing else: no other trigger, no view),
// compared with a database freshly migrated to the same migrations, row by row of sqlite_schema.
import BetterSqlite3 from 'better-sqlite3'
import { Kysely, Migrator, NO_MIGRATIONS, SqliteDialect } from 'kysely'
import { MIGRATIONS } from '../migrations/index.js'

/** Kysely's table of applied migrations (store/migrate.ts). */
const MIGRATION_TABLE = 'kysely_migration'

/**
 * The statistics tables SQLite's own ANALYZE creates (an operator may have run it), with the SQL
 * SQLite gives them: they steer query plans and run nothing, so a backup may hold them (restore
 * drops their rows and rebuilds them: sqlite-backup-rows.ts).
 */
export const SQLITE_STATISTICS: ReadonlyMap<string, string> = new Map([
  ['sqlite_stat1', 'CREATE TABLE sqlite_stat1(tbl,idx,stat)'],
  ['sqlite_stat4', 'CREATE TABLE sqlite_stat4(tbl,idx,neq,nlt,ndlt,sample)'],
])

/** One row of sqlite_schema, as compared: what it is, its name, its table and its SQL text (null for automatic indexes). */
interface SchemaObject {
  type: string
  name: string
  tbl_name: string
  sql: string | null
}

/**
 * Refuses the SQLite database `source` (the backup at `path`, open read-only) unless its schema is
 * exactly the one this release's migrations make, for the migrations it records as applied: those
 * must be this release's first N, in order (a backup the previous release made is accepted; the
 * service applies the rest at its next start). Every sqlite_schema row (type, name, table, SQL
 * text) must equal one of a database freshly migrated so, and every one of that database's must be
 * there; SQLite's statistics tables (SQLITE_STATISTICS) are allowed besides.
 * Throws an Error naming each offending object (a trigger, a view, an unknown table or index, one
 * whose SQL differs, one missing) or the unknown or missing migration; resolves when it matches.
 */
export async function checkBackupSchema(source: BetterSqlite3.Database, path: string): Promise<void> {
  const found = schemaObjects(source)
  const migrations = appliedMigrations(source, found, path)
  const expected = await migratedSchema(migrations)
  const problems: string[] = []
  const wanted = new Map(expected.map((object) => [`${object.type} ${object.name}`, object]))
  for (const object of found) {
    const twin = wanted.get(`${object.type} ${object.name}`)
    wanted.delete(`${object.type} ${object.name}`)
    if (twin === undefined) {
      if (SQLITE_STATISTICS.get(object.name) !== object.sql || object.type !== 'table')
        problems.push(`${object.type} ${object.name} is not one the migrations create`)
    } else if (twin.sql !== object.sql || twin.tbl_name !== object.tbl_name) {
      problems.push(`${object.type} ${object.name} differs from the one the migrations create`)
    }
  }
  for (const missing of wanted.values()) problems.push(`${missing.type} ${missing.name} is missing`)
  if (problems.length > 0) {
    throw new Error(`${path} does not have the schema of this release's migrations: ${problems.join('; ')} (nothing was changed)`)
  }
}

function schemaObjects(database: BetterSqlite3.Database): SchemaObject[] {
  return database.prepare('select type, name, tbl_name, sql from sqlite_schema order by type, name').all() as SchemaObject[]
}

// The migrations the backup records, checked to be this release's first N in order. Read only from a
// real table: anything else by that name is reported by the comparison.
function appliedMigrations(database: BetterSqlite3.Database, found: SchemaObject[], path: string): string[] {
  if (!found.some((object) => object.type === 'table' && object.name === MIGRATION_TABLE)) {
    throw new Error(`${path} records no migrations (no ${MIGRATION_TABLE} table): it is not a database the service made`)
  }
  const applied = (database.prepare(`select name from ${MIGRATION_TABLE} order by name`).all() as Array<{ name: unknown }>).map(
    (row) => String(row.name),
  )
  const known = Object.keys(MIGRATIONS).sort()
  const unknown = applied.filter((name) => !known.includes(name))
  if (unknown.length > 0) {
    throw new Error(
      `${path} records migrations this release does not know (${unknown.join(', ')}): restore it with the release that made it`,
    )
  }
  const missing = known.slice(0, applied.length).filter((name) => !applied.includes(name))
  if (missing.length > 0) throw new Error(`${path} records later migrations without ${missing.join(', ')}`)
  return applied
}

// The schema of an empty in-memory database taken through `migrations` (this release's first N) by
// Kysely's migrator, as the service migrates its own.
async function migratedSchema(migrations: string[]): Promise<SchemaObject[]> {
  const database = new BetterSqlite3(':memory:')
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) })
  try {
    const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } })
    const { error } = await migrator.migrateTo(migrations.at(-1) ?? NO_MIGRATIONS)
    if (error) throw error
    return schemaObjects(database)
  } finally {
    await db.destroy()
  }
}
