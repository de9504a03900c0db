// The service's client-side bound on a PostgreSQL statement (src/store/postgres/bounded-statements.ts,
// docs/deploying.md "Statement timeout"): when the server's answers stop arriving (a network that
// drops them, a server that hangs), every kind of statement — a read, a create, an Idempotency-Key
// create's transaction, a Kysely query or transaction — fails as unavailable once DATABASE_STATEMENT_TIMEOUT_MS + 3 s
// have passed, its connection is closed (an open transaction rolls back), and the store serves again
// on new connections as soon as answers flow. A relay between the store and the real PostgreSQL server holds back its answers.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server, Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { createDatabase } from '../../scripts/lib/postgres-server.js'
import { TEST_DATABASES, testPostgresServerUrl } from '../../scripts/lib/test-server.js'
import { within } from '../../scripts/lib/wait.js'
import { openStore, type Store } from '../../src/store/index.js'
import { STATEMENT_TIMEOUT_MESSAGE } from '../../src/store/postgres/bounded-statements.js'
import { isTransientDriverError, StoreUnavailableError } from '../../src/store/unavailable.js'

const STATEMENT_TIMEOUT_MS = 300
/** The bound under test: DATABASE_STATEMENT_TIMEOUT_MS + 3 s (src/store/index.ts). */
const BOUND_MS = STATEMENT_TIMEOUT_MS + 3000
const POOL_MAX = 5

/** A TCP relay to PostgreSQL whose answers to the client can be held back; counts connections the client closed. */
interface Relay {
  port: number
  /** Holds every answer from now on (the server's bytes stay unread). */
  hold(): void
  /** Lets answers flow again. */
  release(): void
  /** Resolves once the client (the store) has closed `count` connections while the relay was holding. */
  closedByClientWhileHeld(count: number): Promise<void>
  close(): Promise<void>
}

async function startRelay(target: URL): Promise<Relay> {
  const pairs = new Set<{ client: Socket; server: Socket }>()
  let holding = false
  let closedWhileHeld = 0
  let closed = () => {}
  const relay: Server = createServer((client) => {
    const server = new Socket()
    const pair = { client, server }
    pairs.add(pair)
    server.connect(Number(target.port), target.hostname)
    if (holding) server.pause()
    client.on('data', (chunk) => server.write(chunk))
    server.on('data', (chunk) => client.write(chunk))
    client.on('close', () => {
      if (holding) closedWhileHeld++
      closed()
      server.destroy()
      pairs.delete(pair)
    })
    server.on('close', () => client.destroy())
    client.on('error', () => {})
    server.on('error', () => {})
  })
  relay.listen(0, '127.0.0.1')
  await once(relay, 'listening')
  const address = relay.address()
  assert.ok(address && typeof address === 'object')
  return {
    port: address.port,
    hold: () => {
      holding = true
      for (const { server } of pairs) server.pause()
    },
    release: () => {
      holding = false
      for (const { server } of pairs) server.resume()
    },
    closedByClientWhileHeld: (count) =>
      new Promise((resolve) => {
        closed = () => {
          if (closedWhileHeld >= count) resolve()
        }
        closed()
      }),
    close: async () => {
      for (const { client, server } of pairs) {
        client.destroy()
        server.destroy()
      }
      relay.close()
      await once(relay, 'close')
    },
  }
}

/** How `operation` ended and after how many ms. */
async function outcome(operation: Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = Date.now()
  try {
    await operation
    return { error: undefined, ms: Date.now() - started }
  } catch (error) {
    return { error, ms: Date.now() - started }
  }
}

describe('the client-side bound on a PostgreSQL statement', { skip: !TEST_DATABASES.includes('postgres') }, () => {
  let relay: Relay
  let store: Store
  let drop = async () => {}

  before(async () => {
    const serverUrl = new URL(testPostgresServerUrl())
    relay = await startRelay(serverUrl)
    const clientUrl = new URL(serverUrl)
    clientUrl.host = `127.0.0.1:${relay.port}`
    const database = await createDatabase(serverUrl.href, clientUrl.href)
    drop = database.drop
    store = await openStore({
      dialect: 'postgres',
      url: database.url,
      poolMax: POOL_MAX,
      statementTimeoutMs: STATEMENT_TIMEOUT_MS,
    })
    await store.migrate()
  })

  after(async () => {
    await store?.close()
    await relay?.close()
    await drop()
  })

  it(`fails a read, a create, an Idempotency-Key create and a Kysely query as unavailable after ${BOUND_MS} ms without answers, closes their connections, and serves again once answers flow`, async (t) => {
    const first = await store.pets.insertPet({ name: 'before', categoryId: 1n, status: 'available' })
    // Every connection of the pool open and idle, so that each statement below gets one at once.
    await Promise.all(Array.from({ length: POOL_MAX }, () => store.pets.listPets({ limit: 1 })))
    assert.equal(store.poolStats().total, POOL_MAX)

    relay.hold()
    const held = {
      read: outcome(store.pets.listPets({ limit: 10 })),
      create: outcome(store.pets.insertPet({ name: 'held', categoryId: 2n, status: 'available' })),
      idempotentCreate: outcome(
        store.pets.insertPetOnce(
          { name: 'held once', categoryId: 3n, status: 'available' },
          { scope: 'test', key: 'bound-key', fingerprint: 'f', now: Date.now(), expiredBefore: 0, maxRecords: 10 },
        ),
      ),
      kysely: outcome(store.apiKeys.listApiKeys()),
    }
    // A Kysely transaction (copy, migrations) whose statement is cut, and whose rollback then meets
    // the discarded connection, fails as that statement did: a transient error.
    const transaction = outcome(store.db.transaction().execute((trx) => sql`select 1`.execute(trx)))
    for (const [name, pending] of Object.entries(held)) {
      const { error, ms } = await pending
      t.diagnostic(`${name}: ${error instanceof Error ? error.message : 'resolved'} after ${ms} ms`)
      assert.ok(error instanceof StoreUnavailableError, `${name} failed as unavailable, not ${String(error)}`)
      assert.ok(error.message.includes(STATEMENT_TIMEOUT_MESSAGE), `${name}: ${error.message}`)
      assert.ok(ms >= BOUND_MS - 50, `${name} waited the bound, not ${ms} ms`)
      assert.ok(ms < BOUND_MS + 2000, `${name} failed within 2 s of the bound, not ${ms} ms`)
    }
    const { error: transactionError, ms: transactionMs } = await transaction
    t.diagnostic(
      `Kysely transaction: ${transactionError instanceof Error ? transactionError.message : 'resolved'} after ${transactionMs} ms`,
    )
    assert.ok(
      transactionError instanceof Error && transactionError.message === STATEMENT_TIMEOUT_MESSAGE,
      String(transactionError),
    )
    assert.ok(isTransientDriverError(transactionError), 'a transient error (503), not a bug (500)')
    await within(relay.closedByClientWhileHeld(Object.keys(held).length + 1), 2000, 'each held statement closed its connection')

    relay.release()
    assert.equal(await store.pets.findPet(BigInt(first.id)), first.body, 'serves again')
    // The plain create's insert may have committed with its answer held (an outcome its client cannot
    // know, as with any connection lost at commit); the transaction never got its commit sent.
    const names = JSON.parse((await store.pets.listPets({ limit: 10 })).json).map((pet: { name: string }) => pet.name)
    assert.equal(names[0], 'before')
    assert.ok(!names.includes('held once'), `the held transaction was rolled back: ${names}`)
  })
})
