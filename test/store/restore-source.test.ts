// `animal-store restore` reads its backup once, into a private copy beside the live database, and
// restores from that copy only: a backup changed while restore runs changes nothing, and a source
// that is not a plain backup file (a folder, a FIFO, the live file under another name, a file whose
// commits are in a -wal beside it) is refused at once, naming why (src/store/sqlite/sqlite-private-copy.ts).
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import Database from 'better-sqlite3'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, runCli } from '../support/cli-process.js'

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex')

/** The triggers the migrations create; a restored database holds these and no other. */
const MIGRATION_TRIGGERS = ['idempotency_keys_counted_delete', 'idempotency_keys_counted_insert']

/** Names of the triggers in the SQLite file at `path`, sorted; read-only. */
function triggers(path: string): string[] {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    return (
      db.prepare("select name from sqlite_schema where type = 'trigger' order by name").all() as Array<{ name: string }>
    ).map((row) => row.name)
  } finally {
    db.close()
  }
}

describe('animal-store restore reads its backup once (SQLite)', () => {
  const dir = tempDir()
  const genuine = join(dir.path, 'genuine.db')
  before(async () => {
    assertBuilt()
    const env = cliEnv({ DATABASE_URL: `sqlite:${join(dir.path, 'source.db')}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['keys', 'create', '--name', 'ops'], env)).code, 0)
    assert.equal((await runCli(['backup', '--to', genuine], env)).code, 0)
  })
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('restores the backup as it was read: a key-planting trigger added to it while the live database is copied aside never reaches the live file', async () => {
    const live = join(dir.path, 'race', 'live.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${live}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    // About 60 MB of live data, so that copying it aside takes a moment: the window the backup is changed in.
    const db = new Database(live)
    db.prepare(
      `insert into pets (name, category_id, status)
        with recursive n(i) as (select 1 union all select i + 1 from n where i < 240000)
        select i || ' ' || ?, i, 'available' from n`,
    ).run('x'.repeat(230))
    db.close()
    const backup = join(dir.path, 'race', 'backup.db')
    copyFileSync(genuine, backup)

    let ended = false
    const restoring = runCli(['restore', '--from', backup], env, 60_000).finally(() => {
      ended = true
    })
    // Once the copy aside begins, restore has checked the backup: change it then, as the review's script does.
    while (!ended && !readdirSync(join(dir.path, 'race')).some((name) => name.endsWith('.before-restore'))) await delay(2)
    const privateCopy = readdirSync(join(dir.path, 'race')).find((name) => name.endsWith('.restoring'))
    const privateMode = privateCopy && (statSync(join(dir.path, 'race', privateCopy)).mode & 0o777).toString(8)
    const changed = new Database(backup)
    changed.exec(`create trigger pets_audit after insert on pets begin
      insert into api_keys (name, prefix, hash, created_at) values ('audit', 'ask_planted_', '${'f'.repeat(64)}', '2026-01-01T00:00:00Z');
    end`)
    changed.close()
    assert.equal(ended, false, 'the backup was changed while restore ran')
    const result = await restoring

    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^restored 0 pets and 1 API keys into /m)
    assert.deepEqual(triggers(backup), ['pets_audit', ...MIGRATION_TRIGGERS].sort(), 'the backup itself was changed')
    assert.deepEqual(triggers(live), MIGRATION_TRIGGERS, 'the live database has the migrations’ triggers only')
    assert.equal(privateMode, '600', 'restore read the backup into a private copy beside the live file before the copy aside')
    assert.deepEqual(
      readdirSync(join(dir.path, 'race')).filter((name) => name.includes('.restoring')),
      [],
      'the private copy is removed',
    )
  })

  it('refuses to overwrite a private copy left beside the live database, changing nothing', async () => {
    const folder = join(dir.path, 'leftover')
    const live = join(folder, 'live.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${live}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    // The copy is named for the second restore starts in; a file by every name of the next 30 s stands in for a leftover.
    const stamp = (offset: number) =>
      new Date(Date.now() + offset * 1000)
        .toISOString()
        .replace(/[-:]/g, '')
        .replace(/\.\d+Z$/, 'Z')
    for (let offset = 0; offset < 30; offset++)
      writeFileSync(`${live}.${stamp(offset)}.restoring`, 'left behind', { mode: 0o644 })
    const before = sha256(live)
    const result = await runCli(['restore', '--from', genuine], env)
    assert.equal(result.code, 1)
    assert.match(
      result.stderr,
      /live\.db\.\d{8}T\d{6}Z\.restoring already exists \(left by an interrupted restore\?\): remove it/,
    )
    assert.equal(sha256(live), before)
    const leftovers = readdirSync(folder).filter((name) => name.endsWith('.restoring'))
    assert.equal(leftovers.length, 30, 'nothing it did not create is removed')
    for (const name of leftovers) assert.equal(readFileSync(join(folder, name), 'utf8'), 'left behind')
  })

  it('refuses a folder, a FIFO, a device, a hard or symbolic link to the live file, and a backup beside a non-empty -wal, changing nothing', async () => {
    const folder = join(dir.path, 'refusals')
    const live = join(folder, 'live.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${live}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    mkdirSync(join(folder, 'a-folder.db'))
    execFileSync('mkfifo', [join(folder, 'fifo.db')])
    linkSync(live, join(folder, 'hard-link.db'))
    symlinkSync('live.db', join(folder, 'symbolic-link.db'))
    copyFileSync(genuine, join(folder, 'with-wal.db'))
    writeFileSync(join(folder, 'with-wal.db-wal'), 'commits the file does not hold')

    const cases: Array<[string, RegExp]> = [
      [join(folder, 'a-folder.db'), /a-folder\.db is not a regular file \(a folder, FIFO or device\)/],
      [join(folder, 'fifo.db'), /fifo\.db is not a regular file/],
      ['/dev/zero', /\/dev\/zero is not a regular file/],
      [join(folder, 'hard-link.db'), /hard-link\.db is the live database itself\n$/],
      [join(folder, 'symbolic-link.db'), /symbolic-link\.db is the live database itself\n$/],
      [join(folder, 'with-wal.db'), /with-wal\.db-wal is not empty: the backup's last commits .* are there, not in the file/],
    ]
    const before = sha256(live)
    for (const [from, message] of cases) {
      const result = await runCli(['restore', '--from', from], env, 5_000)
      assert.equal(result.code, 1, from)
      assert.match(result.stderr, message)
    }
    assert.equal(sha256(live), before)
    assert.deepEqual(
      readdirSync(folder).filter((name) => /\.(before-restore|restoring)$/.test(name)),
      [],
      'nothing was set aside or left behind',
    )
  })

  it('restores a backup of 64 KiB pages into a live database of 4 KiB pages in WAL mode', async () => {
    const folder = join(dir.path, 'pages')
    const live = join(folder, 'live.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${live}`, LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const backup = join(folder, 'large-pages.db')
    copyFileSync(genuine, backup)
    const db = new Database(backup)
    db.exec('pragma page_size = 65536; vacuum')
    assert.equal(db.pragma('page_size', { simple: true }), 65536)
    db.close()

    const result = await runCli(['restore', '--from', backup], env)
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^restored 0 pets and 1 API keys into /m)
    const restored = new Database(live, { readonly: true })
    assert.equal(restored.pragma('page_size', { simple: true }), 4096)
    assert.equal(restored.pragma('journal_mode', { simple: true }), 'wal')
    restored.close()
    assert.equal((statSync(live).mode & 0o777).toString(8), '600')
    assert.equal(existsSync(`${backup}-wal`), false, 'the backup is never opened by SQLite')
  })
})
