// Migration 0006 on a database holding keys of the old form: each becomes `write` with no rate limit
// of its own (what every key could do before), a key the previous release inserts afterwards (it
// knows neither column) gets the same, the columns refuse values no release gives them, and the
// down migration takes them away again, keeping the keys.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { Migrator, sql } from 'kysely'
import { describeEachDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { openStore, type Store } from '../../src/store/index.js'
import { MIGRATIONS } from '../../src/store/migrations/index.js'
import { databaseBefore, migrationsBefore } from '../support/schema-before.js'

const MIGRATION_0006 = '0006-add-api-key-scope-and-rate-limit'
/** A key row as releases before 0006 write it (hash and prefix are stand-ins: only their shape matters here). */
const oldRow = (n: number, revokedAt: string | null = null) => ({
  name: `old ${n}`,
  prefix: `ask_old0000${n}`,
  hash: String(n).repeat(64),
  created_at: '2026-01-01T00:00:00.000Z',
  revoked_at: revokedAt,
})

describeEachDatabase('migration 0006: api_keys gain scope and rate_limit', (database) => {
  const dir = tempDir()
  let store: Store
  let drop: () => Promise<void>
  before(async () => {
    const { old, config, drop: dropDatabase } = await databaseBefore(database, dir.path, MIGRATION_0006)
    drop = dropDatabase
    await old
      .insertInto('api_keys')
      .values([oldRow(1), oldRow(2, '2026-02-01T00:00:00.000Z')])
      .execute()
    await old.destroy()
    store = await openStore(config)
    const { applied } = await store.migrate()
    assert.equal(applied[0], MIGRATION_0006, `0006 applies first: ${applied.join(', ')}`)
  })
  after(async () => {
    await store.close()
    await drop()
    dir.remove()
  })

  it('makes every existing key, revoked ones too, a write key without a rate limit of its own', async () => {
    const records = await store.apiKeys.listApiKeys()
    assert.deepEqual(
      records.map((record) => [record.name, record.scope, record.rateLimit, record.revokedAt]),
      [
        ['old 1', 'write', undefined, null],
        ['old 2', 'write', undefined, '2026-02-01T00:00:00.000Z'],
      ],
    )
    const active = await store.apiKeys.listActiveKeyHashes()
    assert.deepEqual(
      active.map((key) => [key.prefix, key.scope, key.rateLimit]),
      [['ask_old00001', 'write', undefined]],
    )
  })

  it('gives a key inserted as the previous release inserts it (no scope, no rate_limit) the same defaults', async () => {
    await sql`insert into api_keys (name, prefix, hash, created_at) values (${'by previous release'}, ${'ask_prev0000'}, ${'f'.repeat(64)}, ${'2026-03-01T00:00:00.000Z'})`.execute(
      store.db,
    )
    const row = await store.db
      .selectFrom('api_keys')
      .select(['scope', 'rate_limit'])
      .where('name', '=', 'by previous release')
      .executeTakeFirstOrThrow()
    assert.deepEqual({ scope: row.scope, rateLimit: row.rate_limit }, { scope: 'write', rateLimit: null })
  })

  it('stores and reads back a read key with its own rate limit, as a number on both databases', async () => {
    const record = await store.apiKeys.insertApiKey({
      name: 'page',
      prefix: 'ask_page0000',
      hash: 'e'.repeat(64),
      createdAt: '2026-03-02T00:00:00.000Z',
      scope: 'read',
      rateLimit: 600,
    })
    assert.deepEqual([record.scope, record.rateLimit], ['read', 600])
    const active = (await store.apiKeys.listActiveKeyHashes(record.id - 1n)).find((key) => key.id === record.id)
    assert.deepEqual([active?.scope, active?.rateLimit], ['read', 600])
  })

  for (const [column, value] of [
    ['scope', 'admin'],
    ['scope', 'READ'],
    ['rate_limit', -1],
  ] as const) {
    it(`refuses ${column} = ${value} in the database itself`, async () => {
      const insert = sql`insert into api_keys (name, prefix, hash, created_at, ${sql.ref(column)}) values (${'bad'}, ${'ask_bad00000'}, ${`${column}${value}`.padEnd(64, '0')}, ${'2026-03-03T00:00:00.000Z'}, ${value})`
      await assert.rejects(insert.execute(store.db), /check/i)
      assert.equal((await store.db.selectFrom('api_keys').select('id').where('name', '=', 'bad').execute()).length, 0)
    })
  }

  it('down removes both columns and keeps every key', async () => {
    const before = await store.db.selectFrom('api_keys').select(['id', 'name', 'hash']).orderBy('id').execute()
    const migrator = new Migrator({ db: store.db, provider: { getMigrations: async () => MIGRATIONS } })
    // Down to the migration before 0006 (any later one goes down first, as it would in a rollback).
    const down = await migrator.migrateTo(Object.keys(migrationsBefore(MIGRATION_0006)).at(-1) as string)
    assert.equal(down.error, undefined)
    assert.equal(down.results?.at(-1)?.migrationName, MIGRATION_0006)
    assert.ok(down.results?.every((result) => result.direction === 'Down' && result.status === 'Success'))
    const rows = await sql<Record<string, unknown>>`select * from api_keys order by id`.execute(store.db)
    assert.deepEqual(
      rows.rows.map((row) => [String(row.id), row.name, row.hash]),
      before.map((row) => [String(row.id), row.name, row.hash]),
    )
    for (const column of ['scope', 'rate_limit']) assert.ok(!(column in (rows.rows[0] ?? {})), `${column} is gone`)
    const again = await migrator.migrateToLatest()
    assert.equal(again.error, undefined)
  })
})
