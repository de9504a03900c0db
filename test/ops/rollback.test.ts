// Rollbacks: a release starts and serves on a database a newer release has migrated (its extra
// migrations after every known one), and refuses a database where a known migration is missing or
// out of order (docs/deploying.md, "Upgrades and rollbacks").
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { describeEachDatabase, freshDatabase, type TestDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { openStore } from '../../src/store/index.js'
import { checkNewerSchema } from '../../src/store/migrate.js'
import { assertBuilt, cliEnv, killLeftovers, runCli, startServe } from '../support/cli-process.js'

const KEY = 'ask_rollback-test-key-0123456789abcdefghijklmnopqrstuvwxyzABCD'
const FUTURE = '9000-added-by-a-newer-release'

/** A migrated database of that kind, plus a migration row (and table) only a newer release knows. */
async function migratedByNewerRelease(database: TestDatabase) {
  const dir = tempDir()
  const fresh = await freshDatabase(database, dir.path)
  const store = await openStore(fresh.config)
  await store.migrate()
  // What a newer release's expand migration leaves behind: its table and its row, stamped after ours.
  await sql`create table future_feature (id integer primary key)`.execute(store.db)
  await sql`insert into kysely_migration (name, timestamp) values (${FUTURE}, ${new Date(Date.now() + 1000).toISOString()})`.execute(
    store.db,
  )
  return {
    url: fresh.url,
    store,
    async cleanup() {
      await store.close()
      await fresh.drop()
      dir.remove()
    },
  }
}

describe('checkNewerSchema (the rollback rule)', () => {
  const known = ['0001-a', '0002-b']
  it('returns nothing when the database holds no migration this release does not know', () => {
    assert.deepEqual(checkNewerSchema([], known), [])
    assert.deepEqual(checkNewerSchema(['0001-a'], known), [])
  })
  it('returns the unknown migrations when every known one is applied, in order, before them', () => {
    assert.deepEqual(checkNewerSchema(['0001-a', '0002-b', '0003-c', '0004-d'], known), ['0003-c', '0004-d'])
  })
  it('refuses, naming it, when a known migration is missing', () => {
    assert.throws(
      () => checkNewerSchema(['0001-a', '0003-c'], known),
      /migration 0002-b is not applied.*\(0003-c\); refusing to start/,
    )
  })
  it('refuses, naming it, when an unknown migration was applied before a known one', () => {
    assert.throws(
      () => checkNewerSchema(['0001-a', '0001-x', '0002-b'], known),
      /migration 0001-x was applied where 0002-b belongs/,
    )
  })
})

describeEachDatabase('starting on a database migrated by a newer release', (database) => {
  before(() => assertBuilt())
  after(() => killLeftovers())

  it('warns, naming the unknown migrations, and serves: creates and lists work', async () => {
    const db = await migratedByNewerRelease(database)
    const server = await startServe(cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY }))
    try {
      const warning = JSON.parse(await server.waitForLine(/"level":(40|"warn")/))
      assert.deepEqual(warning.migrations, [FUTURE])
      assert.match(warning.msg, new RegExp(`newer release \\(${FUTURE}\\)`))
      const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }
      const created = await fetch(`${server.origin}/v1/pets`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
      })
      assert.equal(created.status, 201)
      const listed = await fetch(`${server.origin}/v1/pets`, { headers })
      assert.equal(listed.status, 200)
      assert.deepEqual(
        ((await listed.json()) as { name: string }[]).map((pet) => pet.name),
        ['Rex'],
      )
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server.kill()
      await db.cleanup()
    }
  })

  it('`migrate` reports the newer migrations, applies nothing and succeeds', async () => {
    const db = await migratedByNewerRelease(database)
    const applied = async () =>
      (await sql<{ name: string }>`select name from kysely_migration order by name`.execute(db.store.db)).rows
    try {
      const before = await applied()
      assert.equal(before.at(-1)?.name, FUTURE)
      const result = await runCli(['migrate'], cliEnv({ DATABASE_URL: db.url }))
      assert.equal(result.code, 0, result.stderr)
      assert.match(result.stdout, new RegExp(`migrated by a newer release \\(${FUTURE}\\); nothing to apply`))
      assert.deepEqual(await applied(), before, 'no row added or removed')
    } finally {
      await db.cleanup()
    }
  })

  it('refuses to start, naming it, when a migration this release knows is missing', async () => {
    const db = await migratedByNewerRelease(database)
    try {
      await sql`delete from kysely_migration where name = '0004-create-service-secrets'`.execute(db.store.db)
      const result = await runCli(['serve'], cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY, PORT: '0', HOST: '127.0.0.1' }))
      assert.equal(result.code, 1)
      assert.match(
        result.stderr,
        /migration 0004-create-service-secrets is not applied, but migrations this release does not know are \(9000-added-by-a-newer-release\); refusing to start/,
      )
      assert.doesNotMatch(result.stdout, /listening/)
    } finally {
      await db.cleanup()
    }
  })

  it('refuses to start when an unknown migration was applied before one this release knows', async () => {
    const db = await migratedByNewerRelease(database)
    try {
      await sql`update kysely_migration set timestamp = ${'2000-01-01T00:00:00.000Z'} where name = ${FUTURE}`.execute(db.store.db)
      const result = await runCli(['serve'], cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY, PORT: '0', HOST: '127.0.0.1' }))
      assert.equal(result.code, 1)
      assert.match(
        result.stderr,
        /migration 9000-added-by-a-newer-release was applied where 0001-create-pets belongs \(out of order\)/,
      )
    } finally {
      await db.cleanup()
    }
  })
})
