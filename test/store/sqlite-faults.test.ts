// SQLite storage faults under a running server: a full disk and a write lock held elsewhere give
// 503 service_unavailable (reads keep working where they can), no crash, and recovery without a
// restart once space or the write lock returns. The disk is a real, tiny tmpfs mounted for the test.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import BetterSqlite3 from 'better-sqlite3'
import { call, startServer, type TestServer, tempDir } from '../../scripts/lib/test-server.js'

const DISK_BYTES = 4 * 1024 * 1024
/** The interval identical 503s are counted over in this suite's log (production: 10 s). */
const STORM_INTERVAL_MS = 2000
const STORM = 30

describe('SQLite storage faults (real tmpfs disk)', () => {
  const dir = tempDir()
  const mountPoint = join(dir.path, 'disk')
  let server: TestServer
  before(async () => {
    mkdirSync(mountPoint)
    // Needs root (CI and the development machines run as root); fails loudly otherwise. Mode 0700: a
    // tmpfs root is 1777 by default, a folder the service refuses to keep its database in.
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${DISK_BYTES},mode=0700`, 'tmpfs', mountPoint])
    server = await startServer({
      databaseConfig: { dialect: 'sqlite', path: join(mountPoint, 'pets.db') },
      unavailableLogIntervalMs: STORM_INTERVAL_MS,
    })
  })
  after(async () => {
    await server?.close()
    execFileSync('umount', ['-l', mountPoint])
    dir.remove()
  })

  const create = (name: string) => call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })

  it('answers 503 when the disk is full, turns /readyz 503, keeps serving reads, and recovers (readiness too) when space is freed', async () => {
    assert.equal((await create('before')).status, 201)
    const filler = join(mountPoint, 'filler')
    try {
      writeFileSync(filler, Buffer.alloc(DISK_BYTES))
    } catch (error) {
      assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC', 'the filler stops at a full disk')
    }
    let status = 201
    for (let i = 0; i < 2000 && status === 201; i++) status = (await create(`filling ${i} ${'x'.repeat(200)}`)).status
    assert.equal(status, 503, 'a write on a full disk is 503, not 500')
    const list = await call(server, 'GET', '/v1/pets?limit=1')
    assert.equal(list.status, 200, 'reads still work')
    assert.equal(list.json[0].name, 'before')

    for (let i = 0; i < STORM; i++) assert.equal((await create(`storm ${i} ${'x'.repeat(200)}`)).status, 503)
    const full = (line: string) => /SQLITE_FULL/.test(line)
    let storm = server.logs.filter(full).map((line) => JSON.parse(line))
    for (const stopAt = Date.now() + 3 * STORM_INTERVAL_MS; !storm.some((line) => line.count >= STORM) && Date.now() < stopAt; ) {
      await new Promise((resolve) => setTimeout(resolve, 100))
      storm = server.logs.filter(full).map((line) => JSON.parse(line))
    }
    assert.ok(storm.length >= 1 && storm.length <= 2, `${STORM + 1} failed creates, ${storm.length} log lines`)
    assert.ok(
      storm.every((line) => line.level === 40 && line.stack === undefined && line.err === undefined),
      'warnings without a stack',
    )
    assert.ok(
      storm.some((line) => line.count >= STORM),
      `one line counts the storm: ${storm.map((line) => line.count)}`,
    )

    const notReady = await call(server, 'GET', '/readyz', { key: null })
    assert.equal(notReady.status, 503, '/readyz is not ready while writes are refused')
    assert.equal(notReady.json.code, 'service_unavailable')

    rmSync(filler)
    // No create in between: readiness sees the recovery by itself (a probe write, at most once a second).
    let ready = 503
    for (const stopAt = Date.now() + 5_000; ready !== 200 && Date.now() < stopAt; ) {
      ready = (await call(server, 'GET', '/readyz', { key: null })).status
      if (ready !== 200) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    assert.equal(ready, 200, '/readyz is ready again once space is freed, without a create')
    const after = await create('after')
    assert.equal(after.status, 201, 'recovers once space is freed, without a restart')
    assert.equal((await call(server, 'GET', `/v1/pets/${after.json.id}`)).json.name, 'after')
    assert.ok(
      server.logs.some((line) => /SQLITE_FULL/.test(line)),
      'the cause is logged',
    )
  })

  // Another process holding the write lock past the 5 s busy timeout (a backup, a long `copy`, an
  // operator's sqlite3 shell): creates get SQLITE_BUSY on the writer thread, answered 503, while reads
  // go on; once the lock is released, creates succeed again without a restart.
  it('answers 503 while another process holds the write lock, keeps serving reads, and recovers', async () => {
    const holder = new BetterSqlite3(join(mountPoint, 'pets.db'))
    holder.exec('begin exclusive')
    try {
      const refused = await create('locked out')
      assert.equal(refused.status, 503)
      assert.equal(refused.json.code, 'service_unavailable')
      assert.equal((await call(server, 'GET', '/v1/pets?limit=1')).status, 200, 'reads still work')
      assert.ok(
        server.logs.some((line) => /SQLITE_BUSY/.test(line)),
        'the cause is logged',
      )
    } finally {
      holder.exec('rollback')
      holder.close()
    }
    assert.equal((await create('unlocked again')).status, 201)
  })
})
