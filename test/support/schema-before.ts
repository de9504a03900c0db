// A database left as a release before a given migration left it: what a migration's upgrade test
// writes rows of the old form into before the store migrates it (test/store/*-migration.test.ts).
import { Kysely, type Migration, Migrator, PostgresDialect, SqliteDialect } from 'kysely'
import pg from 'pg'
import { freshDatabase, type TestDatabase } from '../../scripts/lib/test-server.js'
import type { DatabaseConfig } from '../../src/store/index.js'
import { MIGRATIONS } from '../../src/store/migrations/index.js'
import { openSqlite } from '../../src/store/sqlite/sqlite-connection.js'

/** The migrations that come before `migration` (a name of MIGRATIONS), in order. */
export function migrationsBefore(migration: string): Record<string, Migration> {
  return Object.fromEntries(Object.entries(MIGRATIONS).filter(([name]) => name < migration))
}

/**
 * A fresh database of `database` (an SQLite file in `dir`, or a new PostgreSQL database) migrated
 * up to, not including, `migration`. `old` writes to it as the older release would, over one
 * connection; destroy it before opening the store on `config`. `drop` removes the database. Throws
 * when a migration fails.
 */
export async function databaseBefore(
  database: TestDatabase,
  dir: string,
  migration: string,
): Promise<{ old: Kysely<any>; config: DatabaseConfig; drop: () => Promise<void> }> {
  const fresh = await freshDatabase(database, dir)
  const old = new Kysely<any>({
    dialect:
      fresh.config.dialect === 'sqlite'
        ? new SqliteDialect({ database: openSqlite(fresh.config.path) })
        : new PostgresDialect({ pool: new pg.Pool({ connectionString: fresh.config.url, max: 1 }) }),
  })
  const earlier = migrationsBefore(migration)
  const migrated = await new Migrator({ db: old, provider: { getMigrations: async () => earlier } }).migrateToLatest()
  if (migrated.error) throw migrated.error
  return { old, config: fresh.config, drop: fresh.drop }
}
