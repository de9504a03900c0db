// Other processes on a live SQLite file: Debian's `sqlite3` (SQLite 3.40, the build operators reach
// for) reads the database and runs `.backup` while `serve` takes creates; the service keeps its
// POSIX lock on the file throughout, and every acknowledged create survives kill -9 (docs/operating.md).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, startServe } from '../support/cli-process.js'
import { createContinuously } from '../support/create-loops.js'

const run = promisify(execFile)
const KEY = 'outside-readers-key_0123456789abcdefXYZ'

/** Runs Debian's `sqlite3` CLI on `path` with a 5 s busy timeout; resolves with its stdout, trimmed. */
async function sqlite3(path: string, command: string): Promise<string> {
  const { stdout } = await run('sqlite3', ['-cmd', '.timeout 5000', path, command], { timeout: 30_000 })
  return stdout.trim()
}

/**
 * The POSIX locks process `pid` holds on the file at `path`, as /proc/locks lines (Linux). POSIX locks
 * belong to the process (its thread group), so the writer thread's count as the service's.
 */
function locksHeld(pid: number, path: string): string[] {
  const inode = statSync(path).ino
  return readFileSync('/proc/locks', 'utf8')
    .split('\n')
    .filter((line) => {
      const fields = line.trim().split(/\s+/)
      return fields[1] === 'POSIX' && fields[4] === String(pid) && fields[5]?.endsWith(`:${inode}`)
    })
}

/** How many of `ids` GET /v1/pets/{id} finds (200), 16 requests at a time. */
async function countFound(server: ServeProcess, ids: string[]): Promise<number> {
  let found = 0
  for (let start = 0; start < ids.length; start += 16) {
    const statuses = await Promise.all(
      ids.slice(start, start + 16).map(async (id) => {
        const response = await fetch(`${server.origin}/v1/pets/${id}`, { headers: { authorization: `Bearer ${KEY}` } })
        await response.arrayBuffer()
        return response.status
      }),
    )
    found += statuses.filter((status) => status === 200).length
  }
  return found
}

describe('SQLite file read and backed up by another process while serving', () => {
  const dir = tempDir()
  const path = join(dir.path, 'live.db')
  const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, API_KEYS: KEY, LOG_LEVEL: 'warn' })
  before(assertBuilt)
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('keeps every acknowledged create over kill -9 after sqlite3 reads and a .backup during creates', async (t) => {
    const acknowledged: string[] = []
    let server = await startServe(env)
    try {
      const creating = createContinuously(server, KEY, 'first', acknowledged)
      // The writer thread opens its connection on the first create: the lock must outlive that.
      await creating.more(20)
      assert.notDeepEqual(locksHeld(server.pid, path), [], 'the service holds a lock on the database file after creates')

      const counted = Number(await sqlite3(path, 'select count(*) from pets'))
      assert.ok(counted >= 20, `sqlite3 counted ${counted} pets`)
      await creating.more(40)
      const beforeBackup = acknowledged.length
      const copy = join(dir.path, 'copy.db')
      await sqlite3(path, `.backup '${copy}'`)
      await creating.more(40)
      await sqlite3(path, 'select count(*) from pets')
      await creating.more(40)
      await creating.stop()

      assert.ok(existsSync(`${path}-wal`), 'the live -wal is still in place')
      assert.notDeepEqual(locksHeld(server.pid, path), [], 'the service still holds its lock after the outside processes closed')
      assert.equal(await sqlite3(copy, 'pragma integrity_check'), 'ok')
      const copied = Number(await sqlite3(copy, 'select count(*) from pets'))
      assert.ok(
        copied >= beforeBackup,
        `the .backup copy holds ${copied} pets, ${beforeBackup} were acknowledged before it began`,
      )

      process.kill(server.pid, 'SIGKILL')
      assert.deepEqual(await server.exited, { code: null, signal: 'SIGKILL' })
      server = await startServe(env)
      const found = await countFound(server, acknowledged)
      t.diagnostic(`${acknowledged.length} creates acknowledged, ${found} found after kill -9 and restart`)
      assert.equal(found, acknowledged.length, 'every acknowledged create survives kill -9')
      assert.equal(await sqlite3(path, 'pragma integrity_check'), 'ok')
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server.kill()
    }
  })
})
