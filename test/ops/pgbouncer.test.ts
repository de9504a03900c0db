// Through Debian's PgBouncer in transaction pooling (docs/deploying.md, "Connection poolers"): the
// request path under concurrency answers without a 500, and six `migrate` runs at once all finish
// and leave no advisory lock behind. Runs in every pass, direct or not, on a PgBouncer of its own.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { type PgBouncer, startPgBouncer } from '../../scripts/lib/pgbouncer.js'
import { createDatabase } from '../../scripts/lib/postgres-server.js'
import { startServer, TEST_DATABASES, type TestServer, testPostgresServerUrl } from '../../scripts/lib/test-server.js'
import { cliEnv, killLeftovers, runCli } from '../support/cli-process.js'

// Kysely's migration lock number, which store/postgres/postgres-migration-lock.ts keeps.
const MIGRATION_LOCK = '3853314791062309107'

async function query<T extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(text, values)).rows
  } finally {
    await client.end()
  }
}

describe('through PgBouncer (pool_mode = transaction)', { skip: !TEST_DATABASES.includes('postgres') }, () => {
  // The server itself: the admin URL when the suite already runs through a pooler.
  const serverUrl = TEST_DATABASES.includes('postgres') ? testPostgresServerUrl() : ''
  let pooler: PgBouncer
  before(async () => {
    pooler = await startPgBouncer(serverUrl)
  })
  after(async () => {
    killLeftovers()
    await pooler?.destroy()
  })

  /** A new database on the server, and its URL through the pooler. */
  async function pooledDatabase() {
    return createDatabase(serverUrl, pooler.url)
  }

  it('answers 16 concurrent clients creating (with and without Idempotency-Key), reading and listing with no 5xx', async () => {
    const database = await pooledDatabase()
    let server: TestServer | undefined
    try {
      server = await startServer({
        databaseConfig: { dialect: 'postgres', url: database.url, poolMax: 8, statementTimeoutMs: 5000 },
        rateLimitPerMinute: 100_000,
      })
      const { origin, key } = server
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
      const statuses = new Map<string, number>()
      const count = (label: string, status: number) => {
        const name = `${label}:${status}`
        statuses.set(name, (statuses.get(name) ?? 0) + 1)
      }
      await Promise.all(
        Array.from({ length: 16 }, async (_, client) => {
          for (let round = 0; round < 15; round++) {
            const body = JSON.stringify({ name: `pet ${client}-${round}`, categoryId: client })
            const created = await fetch(`${origin}/v1/pets`, { method: 'POST', headers, body })
            count('create', created.status)
            const { id } = (await created.json()) as { id: number }
            const once = await fetch(`${origin}/v1/pets`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': `k-${client}-${round}` },
              body,
            })
            count('create-idempotent', once.status)
            await once.arrayBuffer()
            const got = await fetch(`${origin}/v1/pets/${id}`, { headers })
            count('get', got.status)
            await got.arrayBuffer()
            const listed = await fetch(`${origin}/v1/pets?limit=20${round % 2 ? '&status=available' : ''}`, { headers })
            count('list', listed.status)
            await listed.arrayBuffer()
          }
        }),
      )
      assert.deepEqual(Object.fromEntries(statuses), {
        'create:201': 240,
        'create-idempotent:201': 240,
        'get:200': 240,
        'list:200': 240,
      })
    } finally {
      await server?.close()
      await database.drop()
    }
  })

  it('runs six concurrent `migrate` to completion: one applies, the others find it up to date, no lock is left', async (t) => {
    const database = await pooledDatabase()
    try {
      const started = Date.now()
      const runs = await Promise.all(
        Array.from({ length: 6 }, async () => {
          const result = await runCli(['migrate'], cliEnv({ DATABASE_URL: database.url }), 30_000)
          return { ...result, ms: Date.now() - started }
        }),
      )
      t.diagnostic(`migrate runs finished after ${runs.map((run) => run.ms).join(', ')} ms`)
      for (const run of runs) assert.equal(run.code, 0, run.stderr)
      assert.equal(runs.filter((run) => run.stdout.startsWith('Applied migrations: 0001-create-pets')).length, 1)
      assert.equal(runs.filter((run) => run.stdout === 'Database schema is up to date.\n').length, 5)
      // pg_locks spans the whole server, which other test files migrate databases of their own on.
      const locks = await query(
        serverUrl,
        "select pid, granted from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = $1)",
        [new URL(database.url).pathname.slice(1)],
      )
      assert.deepEqual(locks, [], 'an advisory lock outlived the migrations')
    } finally {
      await database.drop()
    }
  })

  it('gives up on a held migration lock after DATABASE_STATEMENT_TIMEOUT_MS, though PgBouncer drops statement_timeout', async () => {
    const database = await pooledDatabase()
    const direct = new URL(database.url)
    direct.port = new URL(serverUrl).port
    const holder = new pg.Client({ connectionString: direct.href })
    await holder.connect()
    try {
      await holder.query('begin')
      await holder.query(`select pg_advisory_xact_lock(${MIGRATION_LOCK})`)
      const started = Date.now()
      const result = await runCli(
        ['migrate'],
        cliEnv({ DATABASE_URL: database.url, DATABASE_STATEMENT_TIMEOUT_MS: '1000' }),
        20_000,
      )
      const elapsed = Date.now() - started
      assert.equal(result.code, 1)
      assert.match(result.stderr, /lock timeout/)
      assert.ok(elapsed < 10_000, `migrate waited ${elapsed} ms for the lock`)
      await holder.query('rollback')
      const retry = await runCli(['migrate'], cliEnv({ DATABASE_URL: database.url }), 20_000)
      assert.equal(retry.code, 0, retry.stderr)
      assert.match(retry.stdout, /^Applied migrations: 0001-create-pets/)
    } finally {
      await holder.end()
      await database.drop()
    }
  })
})
