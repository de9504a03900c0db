// `animal-store restore` trusts nothing a backup carries but rows: a genuine backup given a trigger
// (one that plants an API key on every create), a view, an extra table or an altered index is
// refused, naming the object, with the live database untouched; a genuine backup, and one made
// before the latest migration, still restore (src/store/sqlite/sqlite-schema-check.ts).
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { copyFileSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { buildRelease, PREVIOUS_RELEASE } from '../../scripts/lib/previous-release.js'
import { tempDir } from '../../scripts/lib/test-server.js'
import { MIGRATIONS } from '../../src/store/migrations/index.js'
import { assertBuilt, cliEnv, runCli } from '../support/cli-process.js'
import { databaseBefore } from '../support/schema-before.js'

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

/** A copy of `genuine` at `path`, changed by `sql` run on it. */
function crafted(genuine: string, path: string, sql: string): string {
  copyFileSync(genuine, path)
  const db = new Database(path)
  try {
    db.exec(sql)
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok', 'the crafted file is sound: only its schema is wrong')
  } finally {
    db.close()
  }
  return path
}

// The review's reproduction: after every create, insert (and un-revoke) a key its author knows.
const PLANTING_TRIGGER = `create trigger pets_audit after insert on pets begin
  insert or ignore into api_keys (name, prefix, hash, created_at)
    values ('audit', 'ask_planted_', '${'0'.repeat(64)}', '2026-01-01T00:00:00Z');
  update api_keys set revoked_at = null where hash = '${'0'.repeat(64)}';
end`

describe('animal-store restore refuses a backup whose schema is not the migrations’ own (SQLite)', () => {
  const dir = tempDir()
  const live = join(dir.path, 'live.db')
  const env = cliEnv({ DATABASE_URL: `sqlite:${live}`, LOG_LEVEL: 'warn' })
  const genuine = join(dir.path, 'genuine.db')
  before(async () => {
    assertBuilt()
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], env)).code, 0)
    assert.equal((await runCli(['backup', '--to', genuine], env)).code, 0)
  })
  after(() => dir.remove())

  const cases: Array<[what: string, sql: string, message: RegExp]> = [
    ['a key-planting trigger', PLANTING_TRIGGER, /trigger pets_audit is not one the migrations create/],
    ['a view', 'create view every_key as select * from api_keys', /view every_key is not one the migrations create/],
    ['an extra table', 'create table notes (id integer primary key, body text)', /table notes is not one the migrations create/],
    [
      'an altered index',
      'drop index pets_status_id; create index pets_status_id on pets (name)',
      /index pets_status_id differs from the one the migrations create/,
    ],
    ['a dropped index', 'drop index api_keys_prefix', /index api_keys_prefix is missing/],
    [
      'a migration this release does not know',
      "insert into kysely_migration (name, timestamp) values ('9999-from-the-future', '2030-01-01T00:00:00.000Z')",
      /records migrations this release does not know \(9999-from-the-future\)/,
    ],
  ]
  for (const [what, sql, message] of cases) {
    it(`refuses ${what}, naming it, and leaves the live database as it was`, async () => {
      const before = sha256(live)
      const from = crafted(genuine, join(dir.path, `${what.replaceAll(' ', '-')}.db`), sql)
      const result = await runCli(['restore', '--from', from], env)
      assert.equal(result.code, 1, result.stdout)
      assert.match(result.stderr, message)
      assert.match(result.stderr, /^animal-store: .*\n$/, 'one line')
      assert.equal(result.stdout, '')
      assert.equal(sha256(live), before, 'the live database is byte for byte as it was')
      assert.deepEqual(
        readdirSync(dir.path).filter((name) => name.endsWith('.before-restore')),
        [],
        'nothing was set aside',
      )
    })
  }

  it('still restores a genuine backup', async () => {
    const result = await runCli(['restore', '--from', genuine], env)
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^restored 0 pets and 1 API keys into /m)
  })

  it('restores a backup the previous release made (same migrations, same SQL text)', async () => {
    const previous = buildRelease(PREVIOUS_RELEASE)
    const sourceEnv = cliEnv({ DATABASE_URL: `sqlite:${join(dir.path, 'previous-live.db')}`, LOG_LEVEL: 'warn' })
    const backup = join(dir.path, 'previous-backup.db')
    for (const args of [
      ['keys', 'create', '--name', 'old'],
      ['backup', '--to', backup],
    ]) {
      const result = await runCli(args, sourceEnv, 15_000, previous)
      assert.equal(result.code, 0, result.stderr)
    }
    const target = join(dir.path, 'previous-target.db')
    const restored = await runCli(['restore', '--from', backup], cliEnv({ DATABASE_URL: `sqlite:${target}` }))
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /^restored 0 pets and 1 API keys /m)
  })

  it('restores a backup made before the latest migration; the next start (here `migrate`) applies the rest', async () => {
    const latest = Object.keys(MIGRATIONS).sort().at(-1) ?? ''
    const { old: db, config } = await databaseBefore('sqlite', dir.path, latest)
    const older = config.dialect === 'sqlite' ? config.path : ''
    try {
      await db.insertInto('pets').values({ name: 'from before', category_id: 1, status: 'available' }).execute()
    } finally {
      await db.destroy()
    }
    const target = join(dir.path, 'older-target.db')
    const targetEnv = cliEnv({ DATABASE_URL: `sqlite:${target}`, LOG_LEVEL: 'warn' })
    const restored = await runCli(['restore', '--from', older], targetEnv)
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /^restored 1 pets and 0 API keys /m)
    const migrated = await runCli(['migrate'], targetEnv)
    assert.equal(migrated.code, 0, migrated.stderr)
    assert.match(migrated.stdout, new RegExp(`Applied migrations: ${latest}`))
  })
})
