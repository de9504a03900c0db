// The SQLite write path below the HTTP layer: group commit's row-by-row fallback when a batch
// fails, its all-at-once answer when the failure is transient, and the writer thread's restart
// after it dies. On a real SQLite file (the writer thread cannot share `:memory:`).
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { tempDir } from '../../scripts/lib/test-server.js'
import { openStore, type PetDraft, type Store } from '../../src/store/index.js'
import { compilePetStatements } from '../../src/store/pet-sql.js'
import { groupCommit } from '../../src/store/sqlite/group-commit.js'
import { openSqlite } from '../../src/store/sqlite/sqlite-connection.js'
import { createSqliteWriter } from '../../src/store/sqlite/sqlite-writer.js'
import { createInserters, prepareWrites } from '../../src/store/sqlite/sqlite-writes.js'

const STATEMENTS = compilePetStatements('sqlite')
const GOOD: PetDraft = { name: 'good', categoryId: 1n, status: 'available' }
// The pets table's CHECK refuses this status: a non-transient failure of one row.
const BAD = { name: 'bad', categoryId: 2n, status: 'lost' } as unknown as PetDraft

/** A migrated SQLite store in a fresh folder for the enclosing suite: its file's path and the store. */
function migratedStore(file: string): { path: string; store: () => Store } {
  const dir = tempDir()
  const path = join(dir.path, file)
  let store: Store
  before(async () => {
    store = await openStore({ dialect: 'sqlite', path })
    await store.migrate()
  })
  after(async () => {
    await store.close()
    dir.remove()
  })
  return { path, store: () => store }
}

describe('SQLite group commit', () => {
  const { path, store } = migratedStore('writes.db')

  it('retries a failed batch row by row: the bad row fails alone, the others commit', async () => {
    const database = openSqlite(path)
    try {
      const inserters = createInserters(() => prepareWrites(database, STATEMENTS))
      const results = await Promise.allSettled([
        inserters.insertPet(GOOD),
        inserters.insertPet(BAD),
        inserters.insertPet({ ...GOOD, name: 'good too' }),
      ])
      assert.deepEqual(
        results.map((result) => result.status),
        ['fulfilled', 'rejected', 'fulfilled'],
      )
      const failure = results[1]
      assert.equal(failure?.status === 'rejected' && (failure.reason as { code?: string }).code, 'SQLITE_CONSTRAINT_CHECK')
      const pets = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []))
      for (const pet of pets) assert.equal(await store().pets.findPet(pet.id), pet.body, `pet ${pet.id} is committed as answered`)
    } finally {
      database.close()
    }
  })

  it('answers every caller of a batch with a transient failure at once, without retrying row by row', async () => {
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' })
    let oneByOne = 0
    const insert = groupCommit<number, number>(
      () => {
        throw busy
      },
      (item) => {
        oneByOne++
        return item
      },
    )
    const results = await Promise.allSettled([insert(1), insert(2), insert(3)])
    assert.deepEqual(
      results.map((result) => (result.status === 'rejected' ? result.reason : result.value)),
      [busy, busy, busy],
    )
    assert.equal(oneByOne, 0)
  })

  it('rejects with the driver error as raised (the store classifies it once)', async () => {
    const insert = groupCommit<number, number>(
      () => [],
      () => {
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' })
      },
    )
    await assert.rejects(insert(1), (error: Error & { code?: string }) => error.name === 'Error' && error.code === 'SQLITE_IOERR')
  })
})

describe('SQLite writer thread', () => {
  const { path, store } = migratedStore('writer.db')

  it('starts a new thread on the next create after its thread died, and the create commits', async () => {
    const writer = createSqliteWriter(path, STATEMENTS)
    // read afresh each time: the property changes as threads come and go
    const running = () => writer.thread
    try {
      assert.equal(running(), undefined, 'no thread before the first create')
      const { id: first } = await writer.insertPet(GOOD)
      const thread = running()
      assert.ok(thread)
      await thread.terminate()
      assert.equal(running(), undefined, 'the dead thread is forgotten')
      const { id: second } = await writer.insertPet({ ...GOOD, name: 'after the restart' })
      assert.ok(running() && running() !== thread, 'a new thread runs')
      assert.equal(BigInt(second), BigInt(first) + 1n)
      assert.match(String(await store().pets.findPet(second)), /"name":"after the restart"/)
    } finally {
      await writer.close()
    }
  })

  it('rejects the creates under way when the thread dies, with an error naming the exit', async () => {
    const writer = createSqliteWriter(path, STATEMENTS)
    try {
      await writer.insertPet(GOOD) // the thread is up
      const underWay = writer.insertPet(GOOD)
      void writer.thread?.terminate()
      await underWay.then(
        (id) => assert.ok(id, 'committed before the thread ended'),
        (error: Error) => assert.match(error.message, /writer thread exited/),
      )
      assert.ok(await writer.insertPet(GOOD))
    } finally {
      await writer.close()
    }
  })

  it('answers a create that fails in the thread with the driver code, and refuses creates after close', async () => {
    const writer = createSqliteWriter(path, STATEMENTS)
    await assert.rejects(writer.insertPet(BAD), (error: Error & { code?: string }) => error.code === 'SQLITE_CONSTRAINT_CHECK')
    await writer.close()
    await assert.rejects(writer.insertPet(GOOD), /the store is closed/)
  })
})
