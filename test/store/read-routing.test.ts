// The store with replicas configured that may never serve a read (store/postgres/read-routing.ts): a
// "replica" that is a primary itself, or that does not answer. Every read comes from the primary and
// none fails; creates still resolve to their commit's position, pages to a position at least as late.
// Real replicas: test/ops/replicas.test.ts.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createDatabase, freePort } from '../../scripts/lib/postgres-server.js'
import { TEST_DATABASES, testPostgresServerUrl } from '../../scripts/lib/test-server.js'
import { openStore, type Store } from '../../src/store/index.js'
import { REPLICA_CHECK_INTERVAL_MS } from '../../src/store/postgres/read-routing.js'

const DRAFT = { name: 'routed', categoryId: 7n, status: 'available' } as const

describe('reads routed to replicas that cannot serve [postgres]', { skip: !TEST_DATABASES.includes('postgres') }, () => {
  const serverUrl = TEST_DATABASES.includes('postgres') ? testPostgresServerUrl() : ''
  let drop: () => Promise<void>
  let url: string
  const stores: Store[] = []
  const changes: Array<{ replica: string; serving: boolean }> = []
  before(async () => {
    ;({ url, drop } = await createDatabase(serverUrl))
    const plain = await openStore({ dialect: 'postgres', url, poolMax: 2, statementTimeoutMs: 2000 })
    await plain.migrate()
    stores.push(plain)
  })
  after(async () => {
    for (const store of stores) await store.close()
    await drop()
  })

  /** A store on the test database whose replicas are `replicas`, once its first checks are done. */
  const routedStore = async (replicas: string[]) => {
    const store = await openStore(
      { dialect: 'postgres', url, poolMax: 2, statementTimeoutMs: 2000 },
      { replicaChanged: (change) => changes.push(change) },
      { urls: replicas, waitMs: 50, maxLagMs: 1000 },
    )
    stores.push(store)
    await new Promise((resolve) => setTimeout(resolve, 2 * REPLICA_CHECK_INTERVAL_MS))
    return store
  }

  it('reads from the primary when the "replica" is a primary (not in recovery), and counts each read as unavailable', async () => {
    // The same server under another name: a configuration mistake the checks must catch.
    const store = await routedStore([`${url}?application_name=not-a-replica`])
    const created = await store.pets.insertPet(DRAFT)
    assert.equal(typeof created.position, 'bigint', 'a create resolves to its position')
    const page = await store.pets.listPets({ limit: 100, atLeast: created.position })
    assert.ok(page.json.includes(`"id":${created.id}`))
    assert.ok((page.position ?? -1n) >= (created.position ?? 0n), 'the page was read at least where the create is')
    assert.ok((await store.pets.findPet(created.id, created.position))?.includes('"name":"routed"'))
    assert.ok((await store.pets.findPet(created.id))?.includes('"name":"routed"'))
    const stats = store.readStats()
    assert.deepEqual(
      stats?.replicas.map(({ name, reads, serving }) => ({ name, reads, serving })),
      [{ name: 'replica-1', reads: 0, serving: false }],
    )
    assert.equal(stats?.primaryReads, 3)
    assert.deepEqual(stats?.fallbacks, { unavailable: 3, wait: 0, error: 0 })
    assert.deepEqual(changes, [], 'never in the rotation, so never reported leaving it')
  })

  it('reads from the primary when the replica does not answer, and a replayed create carries a position too', async () => {
    const store = await routedStore([`postgres://nobody:nothing@127.0.0.1:${await freePort()}/none`])
    const once = { scope: 'k', key: 'routing', fingerprint: 'f', now: Date.now(), expiredBefore: 0, maxRecords: 10 }
    const first = await store.pets.insertPetOnce(DRAFT, once)
    const again = await store.pets.insertPetOnce(DRAFT, once)
    assert.equal(first.outcome, 'created')
    assert.equal(again.outcome, 'replayed')
    if (first.outcome !== 'created' || again.outcome !== 'replayed') return
    assert.ok((again.position ?? -1n) >= (first.pet.position ?? 0n))
    assert.ok((await store.pets.findPet(first.pet.id, again.position))?.includes(`"id":${first.pet.id}`))
    assert.equal(store.readStats()?.replicas[0]?.serving, false)
    assert.ok((store.readStats()?.replicas[0]?.lagSeconds ?? 0) > 1, 'never caught up: unboundedly behind')
  })

  it('has no routing, no positions and no read stats without replicas', async () => {
    const [plain] = stores as [Store]
    const created = await plain.pets.insertPet(DRAFT)
    assert.equal(created.position, undefined)
    assert.equal((await plain.pets.listPets({ limit: 1 })).position, undefined)
    assert.equal(plain.readStats(), undefined)
  })
})
