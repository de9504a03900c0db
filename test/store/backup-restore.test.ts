// `animal-store backup` and `restore` as an operator runs them, beside a real `serve` taking creates:
// consistent copies under concurrent writes, owner-only files, verification, refusals that change
// nothing, and PostgreSQL pointed to pg_dump / pg_restore (docs/operating.md).
import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import pg from 'pg'
import { freshDatabase, TEST_DATABASES, tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, runCli, type ServeProcess, startServe } from '../support/cli-process.js'
import { createContinuously } from '../support/create-loops.js'

const KEY = 'backup-restore-key_0123456789abcdefXYZ'

/** Every pet id (decimal text) in the SQLite file at `path`, and its PRAGMA integrity_check; read-only. */
function readCopy(path: string): { integrity: unknown; ids: Set<string> } {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    db.defaultSafeIntegers(true)
    const rows = db.prepare('select id from pets').all() as Array<{ id: bigint }>
    return { integrity: db.pragma('integrity_check', { simple: true }), ids: new Set(rows.map((row) => String(row.id))) }
  } finally {
    db.close()
  }
}

/** The statuses GET /v1/pets/{id} answers for `ids`, in order. */
async function statuses(server: ServeProcess, ids: string[]): Promise<number[]> {
  return Promise.all(
    ids.map(async (id) => {
      const response = await fetch(`${server.origin}/v1/pets/${id}`, { headers: { authorization: `Bearer ${KEY}` } })
      await response.arrayBuffer()
      return response.status
    }),
  )
}

/** GET /v1/pets/{id}, with If-None-Match when `tag` is given. */
function getPet(server: ServeProcess, id: string, tag?: string): Promise<Response> {
  const headers: Record<string, string> = { authorization: `Bearer ${KEY}` }
  if (tag) headers['if-none-match'] = tag
  return fetch(`${server.origin}/v1/pets/${id}`, { headers })
}

/** Creates `count` pets through the service; resolves to their ids. */
async function createPets(server: ServeProcess, count: number, label: string): Promise<string[]> {
  const acknowledged: string[] = []
  const creating = createContinuously(server, KEY, label, acknowledged)
  await creating.more(count)
  await creating.stop()
  return acknowledged
}

/** Migrates the SQLite file at `path` (the CLI's `migrate`) and inserts `count` pets with 240-character names in one transaction. */
async function seedPets(path: string, count: number): Promise<void> {
  assert.equal((await runCli(['migrate'], cliEnv({ DATABASE_URL: `sqlite:${path}` }))).code, 0)
  const db = new Database(path)
  const insert = db.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')
  db.transaction(() => {
    for (let i = 0; i < count; i++) insert.run(`${i} ${'x'.repeat(240)}`, i, 'available')
  })()
  db.close()
}

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8)

describe('animal-store backup --to FILE (SQLite)', () => {
  const dir = tempDir()
  before(assertBuilt)
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('copies the database of a running service while creates continue: every create acknowledged before it began, integrity ok, 0600, one file', async () => {
    const path = join(dir.path, 'live.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, API_KEYS: KEY, LOG_LEVEL: 'warn' })
    // About 3 MiB: the copy takes several steps, between which the service commits.
    await seedPets(path, 10_000)
    const server = await startServe(env)
    try {
      const acknowledged: string[] = []
      const creating = createContinuously(server, KEY, 'during backup', acknowledged)
      await creating.more(50)
      const before = acknowledged.slice()
      const copy = join(dir.path, 'copy.db')
      const result = await runCli(['backup', '--to', copy], env)
      const duringBackup = acknowledged.length - before.length
      await creating.more(10)
      await creating.stop()

      assert.equal(result.code, 0, result.stderr)
      assert.ok(duringBackup > 0, 'creates were acknowledged while the backup ran')
      const { integrity, ids } = readCopy(copy)
      assert.equal(integrity, 'ok')
      assert.deepEqual(
        before.filter((id) => !ids.has(id)),
        [],
        'every create acknowledged before the backup began is in the copy',
      )
      assert.match(
        result.stdout,
        new RegExp(`^backed up ${ids.size} pets and 0 API keys to .*copy\\.db \\(\\d+ bytes; integrity_check ok\\)\\n$`),
      )
      assert.equal(result.stderr, '', 'no progress lines for a small database')
      assert.equal(mode(copy), '600')
      assert.deepEqual(
        readdirSync(dir.path).filter((name) => name.startsWith('copy.db')),
        ['copy.db'],
        'the copy is one file, no -wal or -journal beside it',
      )
      assert.ok(existsSync(`${path}-wal`), "the live database's -wal is left in place")
    } finally {
      await server.stop()
    }
  })

  it('prints progress on stderr, up to 100 %, for a database of 8 MiB or more', async () => {
    const path = join(dir.path, 'large.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn' })
    await seedPets(path, 40_000)
    assert.ok(statSync(path).size >= 8 * 1024 * 1024)

    const result = await runCli(['backup', '--to', join(dir.path, 'large-copy.db')], env, 60_000)
    assert.equal(result.code, 0, result.stderr)
    const lines = result.stderr.trim().split('\n')
    assert.ok(lines.length >= 5, result.stderr)
    for (const line of lines) assert.match(line, /^backup: \d+% \(\d+\.\d of \d+\.\d MiB\)$/)
    assert.match(lines.at(-1) ?? '', /^backup: 100% /)
    assert.match(result.stdout, /^backed up 40000 pets /)
  })

  it('refuses an existing file, the name of its own -wal, a missing folder and a missing database, and leaves nothing behind', async () => {
    const path = join(dir.path, 'refusals.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn' })
    const missing = await runCli(['backup', '--to', join(dir.path, 'never.db')], env)
    assert.equal(missing.code, 1)
    assert.match(missing.stderr, /^animal-store: there is no SQLite database at .*refusals\.db\n$/)
    assert.equal(existsSync(path), false, 'backup does not create the database it was asked to copy')
    assert.equal(existsSync(join(dir.path, 'never.db')), false)

    assert.equal((await runCli(['migrate'], env)).code, 0)
    const existing = join(dir.path, 'existing.db')
    writeFileSync(existing, 'keep me')
    const overwrite = await runCli(['backup', '--to', existing], env)
    assert.equal(overwrite.code, 1)
    assert.match(overwrite.stderr, /existing\.db already exists; a backup never overwrites a file\n$/)
    const itself = await runCli(['backup', '--to', path], env)
    assert.equal(itself.code, 1)
    assert.match(itself.stderr, /refusals\.db already exists/)
    const journal = await runCli(['backup', '--to', `${path}-wal`], env)
    assert.equal(journal.code, 1)
    assert.match(journal.stderr, /refusals\.db-wal is the name of the database's own -wal file\n$/)
    assert.equal(existsSync(`${path}-wal`), false)
    const noFolder = await runCli(['backup', '--to', join(dir.path, 'no', 'such', 'copy.db')], env)
    assert.equal(noFolder.code, 1)
    assert.match(noFolder.stderr, /the folder of .*copy\.db does not exist\n$/)
    assert.equal(existsSync(join(dir.path, 'no')), false)
    assert.equal(readCopy(path).integrity, 'ok')
  })
})

describe('animal-store restore --from FILE (SQLite)', () => {
  const dir = tempDir()
  before(assertBuilt)
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('refuses while the service runs; once it is gone (kill -9), restores the backup and keeps the previous database, -wal included, aside', async () => {
    const path = join(dir.path, 'live.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, API_KEYS: KEY, LOG_LEVEL: 'warn' })
    let server = await startServe(env)
    try {
      const kept = await createPets(server, 10, 'kept')
      const backup = join(dir.path, 'backup.db')
      assert.equal((await runCli(['backup', '--to', backup], env)).code, 0)
      const later = await createPets(server, 5, 'later')
      const first = await getPet(server, later[0] ?? '')
      await first.arrayBuffer()
      const laterTag = first.headers.get('etag') ?? ''
      assert.match(laterTag, /^"/)

      const refused = await runCli(['restore', '--from', backup], env)
      assert.equal(refused.code, 1)
      assert.match(
        refused.stderr,
        /another process has .*live\.db open \(a running service\?\): stop the service first, or pass --force/,
      )
      assert.deepEqual(await statuses(server, later), Array(later.length).fill(200), 'the live database is unchanged')
      assert.deepEqual(
        readdirSync(dir.path).filter((name) => name.startsWith('live.db.')),
        [],
        'nothing was set aside',
      )

      // SIGKILL leaves the latest creates in the -wal only: the copy kept aside must hold them too.
      assert.deepEqual(await server.stop('SIGKILL'), { code: null, signal: 'SIGKILL' })
      assert.ok(existsSync(`${path}-wal`))
      const restored = await runCli(['restore', '--from', backup], env)
      assert.equal(restored.code, 0, restored.stderr)
      const aside = /^kept the previous database at (.+\.before-restore)$/m.exec(restored.stdout)?.[1]
      assert.ok(aside, restored.stdout)
      assert.match(
        restored.stdout,
        new RegExp(`^restored ${kept.length} pets and 0 API keys into .*live\\.db \\(integrity_check ok\\)$`, 'm'),
      )
      assert.equal(mode(aside), '600')
      assert.equal(readCopy(aside).ids.size, kept.length + later.length, 'the database set aside holds every pet it had')

      server = await startServe(env)
      assert.deepEqual(await statuses(server, kept), Array(kept.length).fill(200))
      assert.deepEqual(await statuses(server, later), Array(later.length).fill(404))
      assert.equal(mode(path), '600')
      // The id of the first pet the backup lacks is handed out again, to another pet: the tag a
      // client kept for the first one must not answer 304 for it.
      assert.ok((await createPets(server, 1, 'reborn')).includes(later[0] ?? ''))
      const reborn = await getPet(server, later[0] ?? '', laterTag)
      assert.equal(reborn.status, 200)
      assert.match(((await reborn.json()) as { name: string }).name, /^reborn/)
    } finally {
      server.kill()
    }
  })

  it('with --force, restores under a running service, whose next reads see the backup', async () => {
    const path = join(dir.path, 'forced.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, API_KEYS: KEY, LOG_LEVEL: 'warn' })
    const server = await startServe(env)
    try {
      const kept = await createPets(server, 3, 'kept')
      const backup = join(dir.path, 'forced-backup.db')
      assert.equal((await runCli(['backup', '--to', backup], env)).code, 0)
      const later = await createPets(server, 3, 'later')
      const forced = await runCli(['restore', '--from', backup, '--force'], env)
      assert.equal(forced.code, 0, forced.stderr)
      assert.match(forced.stdout, new RegExp(`restored ${kept.length} pets .*\nrestart every service on this database now`))
      assert.deepEqual(await statuses(server, [...kept, ...later]), [...kept.map(() => 200), ...later.map(() => 404)])
    } finally {
      await server.stop()
    }
  })

  it('refuses a missing file, a file that is not a database and a database without the service tables, changing nothing', async () => {
    const path = join(dir.path, 'untouched.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const garbage = join(dir.path, 'garbage.db')
    writeFileSync(garbage, 'this is not an SQLite database, just text long enough to have a header'.repeat(20))
    const foreign = join(dir.path, 'foreign.db')
    const other = new Database(foreign)
    other.exec('create table animals (id integer primary key)')
    other.close()

    const cases: Array<[string, RegExp]> = [
      [join(dir.path, 'missing.db'), /there is no file at .*missing\.db\n$/],
      [garbage, /garbage\.db is not a readable SQLite database: file is not a database\n$/],
      [foreign, /foreign\.db is not an Animal Store database \(no pets table\)\n$/],
      [path, /untouched\.db is the live database itself\n$/],
    ]
    for (const [from, message] of cases) {
      const result = await runCli(['restore', '--from', from], env)
      assert.equal(result.code, 1, from)
      assert.match(result.stderr, message)
    }
    assert.deepEqual(
      readdirSync(dir.path).filter((name) => name.startsWith('untouched.db.')),
      [],
      'nothing was set aside',
    )
    assert.equal(readCopy(path).integrity, 'ok')
  })

  it('restores into a missing database file, creating it 0600', async () => {
    const source = join(dir.path, 'source.db')
    const sourceEnv = cliEnv({ DATABASE_URL: `sqlite:${source}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], sourceEnv)).code, 0)
    const backup = join(dir.path, 'keys-backup.db')
    assert.equal((await runCli(['backup', '--to', backup], sourceEnv)).code, 0)

    const fresh = join(dir.path, 'new', 'fresh.db')
    const result = await runCli(['restore', '--from', backup], cliEnv({ DATABASE_URL: `sqlite:${fresh}` }))
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout, `restored 0 pets and 1 API keys into ${fresh} (integrity_check ok)\n`)
    assert.equal(mode(fresh), '600')
    assert.equal(mode(join(dir.path, 'new')), '700')
  })
})

describe('backup and restore on PostgreSQL', () => {
  it('the cursor key statement docs/operating.md gives after pg_restore makes a new 32-byte key', {
    skip: !TEST_DATABASES.includes('postgres'),
  }, async () => {
    const statement = /```sql\n([^`]*update service_secrets[^`]*)```/.exec(readFileSync('docs/operating.md', 'utf8'))?.[1]
    assert.ok(statement, 'docs/operating.md has the statement')
    const fresh = await freshDatabase('postgres', '')
    const client = new pg.Client(fresh.url)
    try {
      assert.equal((await runCli(['migrate'], cliEnv({ DATABASE_URL: fresh.url }))).code, 0)
      await client.connect()
      const cursorKey = async () =>
        (await client.query<{ value: string }>("select value from service_secrets where name = 'cursor'")).rows[0]?.value ?? ''
      const before = await cursorKey()
      assert.equal((await client.query(statement)).rowCount, 1)
      const after = await cursorKey()
      assert.notEqual(after, before)
      assert.match(after, /^[A-Za-z0-9_-]{43}$/)
      assert.equal(Buffer.from(after, 'base64url').length, 32)
    } finally {
      await client.end()
      await fresh.drop()
    }
  })

  const env = cliEnv({ DATABASE_URL: 'postgres://app:secret@127.0.0.1:1/animals' })
  before(assertBuilt)

  it('backup exits 1 and names pg_dump with its command', async () => {
    const result = await runCli(['backup', '--to', 'dump.pgc'], env)
    assert.equal(result.code, 1)
    assert.match(result.stderr, /use pg_dump|with pg_dump: pg_dump --format=custom --file=FILE "\$DATABASE_URL"/)
    assert.doesNotMatch(result.stderr, /secret/)
  })

  it('restore exits 1 and names pg_restore with its command', async () => {
    const result = await runCli(['restore', '--from', 'dump.pgc'], env)
    assert.equal(result.code, 1)
    assert.match(
      result.stderr,
      /with pg_restore: pg_restore --clean --if-exists --no-owner --single-transaction --dbname="\$DATABASE_URL" FILE/,
    )
  })
})
