// PostgreSQL reads (a page, a pet) and plain creates are named statements, parsed and planned once
// per server connection; when a server connection turns out not to have the statement the driver
// thinks it prepared (26000), or to have its name already (42P05), as behind PgBouncer's transaction
// pooling, the statement is answered all the same (a create stored once), sent again unnamed, and
// statements stay unnamed (postgres-pets.ts).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type PgBouncer, startPgBouncer } from '../../scripts/lib/pgbouncer.js'
import { createDatabase } from '../../scripts/lib/postgres-server.js'
import { TEST_DATABASES, testPostgresServerUrl } from '../../scripts/lib/test-server.js'
import { openStore, type Store } from '../../src/store/index.js'

const SETTINGS = { dialect: 'postgres', statementTimeoutMs: 5000 } as const

/** The named statements of the store's session (run on a pool of one connection: the session of its reads). */
async function preparedNames(store: Store): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select name from pg_prepared_statements order by name`.execute(store.db)
  return rows.map((row) => row.name)
}

/** A store on a new database with `pets` pets, counting the calls of namedStatementsNotKept. */
async function storeWithPets(url: string, poolMax: number, pets: number) {
  let notKept = 0
  const store = await openStore({ ...SETTINGS, url, poolMax }, { namedStatementsNotKept: () => notKept++ })
  await store.migrate()
  const ids: string[] = []
  for (let i = 0; i < pets; i++)
    ids.push((await store.pets.insertPet({ name: `pet ${i}`, categoryId: 7n, status: 'available' })).id)
  return { store, ids, notKept: () => notKept }
}

/** The Pet body of the pet with this id and name (whatever members follow): the right pet, not another statement's answer. */
const petBody = (id: string | undefined, name: string) => new RegExp(`^\\{"id":${id},"name":"${name}",[^{}]*\\}$`)

describe('PostgreSQL named statements (reads, create)', { skip: !TEST_DATABASES.includes('postgres') }, () => {
  // The server itself, not the suite's pooler when it runs through one.
  const serverUrl = TEST_DATABASES.includes('postgres') ? testPostgresServerUrl() : ''
  const drops: (() => Promise<void>)[] = []
  const database = async (clientUrl?: string) => {
    const created = await createDatabase(serverUrl, clientUrl)
    drops.push(created.drop)
    return created.url
  }
  let pooler: PgBouncer
  before(async () => {
    pooler = await startPgBouncer(serverUrl)
  })
  after(async () => {
    await pooler?.destroy()
    for (const drop of drops) await drop()
  })

  it('are prepared once per connection on the server, one per statement used (the create, a pet, a page)', async () => {
    const { store, ids, notKept } = await storeWithPets(await database(), 1, 3)
    try {
      assert.equal((await preparedNames(store)).length, 1, 'the create, prepared once for its three pets')
      for (let i = 0; i < 3; i++) {
        assert.match((await store.pets.findPet(BigInt(ids[0] ?? ''))) ?? '', petBody(ids[0], 'pet 0'))
        assert.equal((await store.pets.listPets({ limit: 2 })).lastId, ids[1])
      }
      const names = await preparedNames(store)
      assert.equal(names.length, 3, names.join(', '))
      for (const name of names) assert.match(name, /^animal_store_[0-9a-f]{32}$/)
      assert.equal(notKept(), 0)
    } finally {
      await store.close()
    }
  })

  it('answers a read whose statement the server connection lost (26000), then reads unnamed', async () => {
    const { store, ids, notKept } = await storeWithPets(await database(), 1, 2)
    try {
      assert.ok(await store.pets.findPet(BigInt(ids[0] ?? '')))
      await sql`deallocate all`.execute(store.db) // as a pooler's other server connection would be
      assert.match((await store.pets.findPet(BigInt(ids[1] ?? ''))) ?? '', petBody(ids[1], 'pet 1'))
      assert.equal(notKept(), 1)
      assert.equal((await store.pets.listPets({ limit: 1 })).more, true)
      assert.deepEqual(await preparedNames(store), [], 'no read is named any more')
      assert.equal(notKept(), 1, 'reported once')
    } finally {
      await store.close()
    }
  })

  it('stores a create whose statement the server connection lost (26000) once, then creates unnamed', async () => {
    const { store, notKept } = await storeWithPets(await database(), 1, 1)
    try {
      await sql`deallocate all`.execute(store.db) // as a pooler's other server connection would be
      const created = await store.pets.insertPet({ name: 'after deallocate', categoryId: 7n, status: 'available' })
      assert.match(created.body, petBody(created.id, 'after deallocate'))
      assert.equal(notKept(), 1)
      const { rows } = await sql<{ count: string }>`select count(*) as count from pets where name = 'after deallocate'`.execute(
        store.db,
      )
      assert.equal(rows[0]?.count, '1', 'stored once, not once per attempt')
      await store.pets.insertPet({ name: 'unnamed', categoryId: 7n, status: 'available' })
      assert.deepEqual(await preparedNames(store), [], 'no statement is named any more')
    } finally {
      await store.close()
    }
  })

  it('answers a read whose name the server connection already has (42P05), never with the other statement', async () => {
    const first = await storeWithPets(await database(), 1, 1)
    let name: string | undefined
    try {
      await first.store.pets.findPet(1n)
      name = (await preparedNames(first.store))[0]
    } finally {
      await first.store.close()
    }
    assert.ok(name)
    const { store, ids, notKept } = await storeWithPets(await database(), 1, 1)
    try {
      // The name taken, on this very connection, by another statement.
      await sql.raw(`prepare ${name} as select 'not a pet' as body`).execute(store.db)
      assert.match((await store.pets.findPet(BigInt(ids[0] ?? ''))) ?? '', petBody(ids[0], 'pet 0'))
      assert.equal(notKept(), 1)
    } finally {
      await store.close()
    }
  })

  it('through PgBouncer in transaction pooling: every read answered, names off after the first mismatch', async () => {
    // Two pools of one connection each, one PgBouncer server connection between them: the second's
    // first read parses a name the server connection already has, or binds one it does not.
    const url = await database(pooler.url)
    const a = await storeWithPets(url, 1, 20)
    const b = await storeWithPets(url, 1, 0)
    try {
      for (let i = 0; i < 40; i++) {
        const id = a.ids[i % 20] ?? ''
        assert.equal(JSON.parse((await (i % 2 ? b : a).store.pets.findPet(BigInt(id))) ?? 'null').id, Number(id))
      }
      const bodies = await Promise.all(
        Array.from({ length: 40 }, (_, i) => (i % 2 ? a : b).store.pets.findPet(BigInt(a.ids[i % 20] ?? ''))),
      )
      for (const [i, body] of bodies.entries()) assert.equal(JSON.parse(body ?? 'null').id, Number(a.ids[i % 20]))
      const pages = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).store.pets.listPets({ limit: 5 })))
      for (const page of pages) assert.equal(JSON.parse(page.json).length, 5)
      assert.equal(a.notKept() + b.notKept() >= 1, true, 'the pooler was noticed')
      assert.ok(a.notKept() <= 1 && b.notKept() <= 1, 'once per store')
    } finally {
      await a.store.close()
      await b.store.close()
    }
  })
})
