// `animal-store restore` trusts no row the service did not write: a row that breaks the API's rules
// (a name outside 1–255 characters or without a non-whitespace character, a categoryId that is not an
// int64, a status outside PetStatus) or the service's own (a key's rate limit, an idempotency record's
// time) is refused, naming its table and rowid, with the live database untouched; what the service
// derives from rows (statistics, sequences, per-key record counts) is rebuilt from them, whatever the
// backup said (src/store/sqlite/sqlite-backup-rows.ts).
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, runCli } from '../support/cli-process.js'

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

/** A copy of `genuine` at `path`, changed by `sql` run on it (CHECK constraints on, unless the SQL turns them off). */
function crafted(genuine: string, path: string, sql: string): string {
  copyFileSync(genuine, path)
  const db = new Database(path)
  try {
    db.exec(sql)
  } finally {
    db.close()
  }
  return path
}

/** The rows `sql` selects from the SQLite file at `path`, integers as bigint; read-only. */
function rows(path: string, sql: string): unknown[] {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    return db.prepare(sql).safeIntegers().all()
  } finally {
    db.close()
  }
}

describe('animal-store restore trusts no row the service did not write (SQLite)', () => {
  const dir = tempDir()
  const genuine = join(dir.path, 'genuine.db')
  const empty = join(dir.path, 'empty.db')
  /** A live database of its own for each case (a copy of a freshly migrated one), in a folder of its own. */
  const liveDatabase = (name: string) => {
    const folder = join(dir.path, name)
    mkdirSync(folder)
    const path = join(folder, 'live.db')
    copyFileSync(empty, path)
    return { folder, path, env: cliEnv({ DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn' }) }
  }
  before(async () => {
    assertBuilt()
    const source = join(dir.path, 'source.db')
    const sourceEnv = cliEnv({ DATABASE_URL: `sqlite:${source}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['keys', 'create', '--name', 'ops', '--rate-limit', '600'], sourceEnv)).code, 0)
    // Rows as the service writes them: three pets, two of them created under an Idempotency-Key.
    const db = new Database(source)
    db.exec(`insert into pets (name, category_id, status) values ('Rex', 1, 'available'), ('  Tom  ', -9223372036854775808, 'sold'),
        ('Ünïcødé 🐈', 9223372036854775807, 'pending');
      insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at, pet_id)
        values ('key:1', 'a', 'h', 1764000000000, 1), ('key:1', 'b', 'h', 1764000000001, 2)`)
    db.close()
    assert.equal((await runCli(['backup', '--to', genuine], sourceEnv)).code, 0)
    assert.equal((await runCli(['migrate'], cliEnv({ DATABASE_URL: `sqlite:${empty}` }))).code, 0)
  })
  after(() => dir.remove())

  const refused: Array<[what: string, sql: string, message: RegExp]> = [
    [
      'a name of 256 characters',
      "update pets set name = printf('%.256c', 'x') where id = 2",
      /pets rowid 2: name must be text of 1 to 255 characters/,
    ],
    [
      'a name of 256 characters beyond the Basic Multilingual Plane',
      "update pets set name = printf('%.256c', '🐈') where id = 3",
      /pets rowid 3: name must be text of 1 to 255/,
    ],
    [
      'an empty name',
      "update pets set name = '' where id = 1",
      /pets rowid 1: name must be text of 1 to 255 characters, one of them not whitespace/,
    ],
    [
      'a name of whitespace only',
      "update pets set name = ' ' || char(9) || char(12288) where id = 1",
      /pets rowid 1: name must be/,
    ],
    [
      'a name holding NUL',
      "update pets set name = 'Re' || char(0) || 'x' where id = 1",
      /pets rowid 1: name must be .*with no NUL/,
    ],
    ['a name stored as a blob', "update pets set name = x'526578' where id = 1", /pets rowid 1: name must be text/],
    [
      'a categoryId of text',
      "update pets set category_id = 'not a number' where id = 3",
      /pets rowid 3: category_id must be an integer \(int64\)/,
    ],
    [
      'a categoryId with a fraction',
      'update pets set category_id = 1.5 where id = 1',
      /pets rowid 1: category_id must be an integer/,
    ],
    [
      'a categoryId beyond int64, stored as a real',
      'update pets set category_id = 9223372036854775808 where id = 1',
      /pets rowid 1: category_id must be an integer/,
    ],
    [
      'a status outside PetStatus (written past the CHECK constraint)',
      "pragma ignore_check_constraints = on; update pets set status = 'lost' where id = 2",
      /fails PRAGMA integrity_check: CHECK constraint failed in pets/,
    ],
    [
      'a rate limit stored as text',
      "update api_keys set rate_limit = 'unlimited'",
      /api_keys rowid 1: rate_limit must be null or an integer from 0 to 10000000/,
    ],
    [
      'a rate limit above the largest',
      'update api_keys set rate_limit = 1000000000000',
      /api_keys rowid 1: rate_limit must be null or an integer/,
    ],
    [
      'an idempotency record made at a time that is text',
      "update idempotency_keys set created_at = 'never' where idempotency_key = 'b'",
      /idempotency_keys rowid 2: created_at must be an integer \(ms since the Unix epoch\)/,
    ],
    [
      'an idempotency record of a pet id that is text',
      "update idempotency_keys set pet_id = 'x'",
      /idempotency_keys rowid 1: pet_id must be null or an integer \(int64\) \(2 rows of idempotency_keys break the rules\)/,
    ],
    [
      'bad rows in two tables',
      "update pets set name = ''; update api_keys set rate_limit = 0.5",
      /holds rows the service would not have written: pets rowid 1: name must be .* \(3 rows of pets break the rules\); api_keys rowid 1: rate_limit must be/,
    ],
  ]
  for (const [what, sql, message] of refused) {
    it(`refuses ${what}, naming where it is, and leaves the live database as it was`, async () => {
      const live = liveDatabase(what.replaceAll(' ', '-'))
      const before = sha256(live.path)
      const from = crafted(genuine, join(live.folder, 'crafted.db'), sql)
      const result = await runCli(['restore', '--from', from], live.env)
      assert.equal(result.code, 1, result.stdout)
      assert.match(result.stderr, message)
      assert.match(result.stderr, /^animal-store: .*\n$/, 'one line')
      assert.equal(result.stdout, '')
      assert.equal(sha256(live.path), before, 'the live database is byte for byte as it was')
      assert.deepEqual(
        readdirSync(live.folder).filter((name) => /\.(before-restore|restoring)$/.test(name)),
        [],
        'nothing was set aside or left behind',
      )
    })
  }

  /** Restores a copy of the genuine backup changed by `sql` into a live database of its own; fails unless restore succeeds. Resolves to the live file. */
  async function restoreCrafted(name: string, sql: string): Promise<string> {
    const live = liveDatabase(name)
    const result = await runCli(['restore', '--from', crafted(genuine, join(live.folder, 'crafted.db'), sql)], live.env)
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^restored 3 pets and 1 API keys into /m)
    return live.path
  }

  it('restores a genuine backup as it is: its counts and sequences, no statistics made up', async () => {
    const live = await restoreCrafted('genuine-copy', 'select 1')
    assert.deepEqual(rows(live, 'select name, seq from sqlite_sequence order by name'), [
      { name: 'api_keys', seq: 1n },
      { name: 'pets', seq: 3n },
    ])
    assert.deepEqual(rows(live, 'select api_key_id, records from idempotency_key_counts'), [{ api_key_id: 'key:1', records: 2n }])
    assert.deepEqual(rows(live, "select name from sqlite_schema where name like 'sqlite_stat%'"), [])
  })

  it('drops statistics the backup carries and makes them again from its rows', async () => {
    const analyzed = crafted(genuine, join(dir.path, 'analyzed.db'), 'analyze')
    const genuineStatistics = rows(analyzed, 'select tbl, idx, stat from sqlite_stat1 order by tbl, idx')
    const live = await restoreCrafted(
      'stat1',
      "analyze; update sqlite_stat1 set stat = '100000000 1 1' where idx = 'pets_status_id'",
    )
    assert.deepEqual(rows(live, 'select tbl, idx, stat from sqlite_stat1 order by tbl, idx'), genuineStatistics)
    assert.ok(genuineStatistics.some((row) => (row as { idx: string }).idx === 'pets_status_id'))
  })

  it('sets the sequence to the largest id: a sequence at 2^63−1 does not survive', async () => {
    const live = await restoreCrafted(
      'sequence-max',
      "update sqlite_sequence set seq = 9223372036854775807 where name = 'pets'; update sqlite_sequence set seq = -5 where name = 'api_keys'; insert into sqlite_sequence values ('ghost', 7)",
    )
    assert.deepEqual(rows(live, 'select name, seq from sqlite_sequence order by name'), [
      { name: 'api_keys', seq: 1n },
      { name: 'pets', seq: 3n },
    ])
  })

  it('recounts the per-key record counts: a negative count that would switch the cap off does not survive', async () => {
    const live = await restoreCrafted(
      'count-negative',
      "update idempotency_key_counts set records = -1000000000; insert into idempotency_key_counts values ('API_KEYS:0123456789abcdef', 5)",
    )
    assert.deepEqual(rows(live, 'select api_key_id, records from idempotency_key_counts'), [{ api_key_id: 'key:1', records: 2n }])
  })

  it('gives the database a new cursor key, and one when the backup lacks it', async () => {
    const keyOf = (path: string) => rows(path, "select value from service_secrets where name = 'cursor'")
    const renewed = await restoreCrafted('cursor-renewed', 'select 1')
    const [backupKey] = keyOf(genuine)
    const [restoredKey] = keyOf(renewed)
    assert.ok(backupKey && restoredKey)
    assert.notDeepEqual(restoredKey, backupKey)
    const restored = await restoreCrafted('cursor-missing', "delete from service_secrets where name = 'cursor'")
    assert.match(String((keyOf(restored)[0] as { value?: string } | undefined)?.value), /^[A-Za-z0-9_-]{43}$/)
  })

  it("resets the header's user_version and application_id, which the service never sets", async () => {
    const live = await restoreCrafted('user-version', 'pragma user_version = 99; pragma application_id = 1234')
    assert.deepEqual(rows(live, 'select * from pragma_user_version, pragma_application_id'), [
      { user_version: 0n, application_id: 0n },
    ])
  })
})
