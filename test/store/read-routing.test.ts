// The store's read routing (store/postgres/read-routing.ts) over a real PostgreSQL primary and a
// streaming replica of it (scripts/lib/postgres-replica.ts, one pair for the file), and over
// "replicas" that can never serve: one that does not answer, refuses the password or the check's
// function, is a primary itself, follows another cluster, or was promoted. Each replica's first check
// is reported, whatever its outcome, and every read of such a store comes from the primary. The
// whole service with replicas, through HTTP: test/ops/replicas.test.ts.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { type PostgresReplica, startReplica } from '../../scripts/lib/postgres-replica.js'
import { createDatabase, freePort, type PostgresServer, startPostgres } from '../../scripts/lib/postgres-server.js'
import { TEST_DATABASES, testPostgresServerUrl } from '../../scripts/lib/test-server.js'
import { openStore, type ReplicaChange, type ReplicaSettings, type Store } from '../../src/store/index.js'

const DRAFT = { name: 'routed', categoryId: 7n, status: 'available' } as const
/** A role with no superuser rights, as a service's usually is (its password is the test's only). */
const LIMITED = { role: 'limited_reader', password: 'limited-password' }

/** One statement on `url`. */
async function run(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

/** `url` with its user and password replaced. */
const as = (url: string, user: string, password: string) => Object.assign(new URL(url), { username: user, password }).href

describe('read routing over a primary and its streaming replica [postgres]', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
  timeout: 120_000,
}, () => {
  let primary: PostgresServer
  let replica: PostgresReplica
  const stores: Store[] = []
  before(async () => {
    primary = await startPostgres()
    replica = await startReplica(primary)
    await run(primary.url, `create role ${LIMITED.role} login password '${LIMITED.password}'`)
  })
  after(async () => {
    for (const store of stores) await store.close()
    await replica?.destroy()
    await primary?.destroy()
  })

  /** A new migrated database on the primary: its URL there and on the replica, once the replica has replayed it. */
  async function database(): Promise<{ url: string; onReplica: string }> {
    const { url } = await createDatabase(primary.url)
    const plain = await openStore({ dialect: 'postgres', url, poolMax: 2, statementTimeoutMs: 2000 })
    try {
      await plain.migrate()
    } finally {
      await plain.close()
    }
    await replica.caughtUp()
    return { url, onReplica: Object.assign(new URL(replica.url), { pathname: new URL(url).pathname }).href }
  }

  /**
   * A store on `url` whose replicas are `replicas`, once every replica's first check is reported;
   * with the reports so far (each replica's outcome, then its changes), and `reported(n)`, which
   * resolves once there are `n`.
   */
  async function routedStore(
    url: string,
    replicas: string[],
    settings: Partial<Omit<ReplicaSettings, 'urls'>> = {},
    poolMax = 2,
  ): Promise<{ store: Store; changes: ReplicaChange[]; reported(count: number): Promise<void> }> {
    const changes: ReplicaChange[] = []
    const waiting = new Set<{ count: number; resolve(): void }>()
    const reported = (count: number) =>
      new Promise<void>((resolve) => {
        if (changes.length >= count) resolve()
        else waiting.add({ count, resolve })
      })
    const store = await openStore(
      { dialect: 'postgres', url, poolMax, statementTimeoutMs: 2000 },
      {
        replicaChanged: (change) => {
          changes.push(change)
          for (const waiter of waiting) if (changes.length >= waiter.count) waiting.delete(waiter) && waiter.resolve()
        },
      },
      { urls: replicas, waitMs: 50, maxLagMs: 1000, ...settings },
    )
    stores.push(store)
    // Each replica's first outcome is reported once: so many reports, one per replica, at the least.
    while (new Set(changes.map((change) => change.replica)).size < replicas.length) await reported(changes.length + 1)
    return { store, changes, reported }
  }

  it("reports each replica's first check, serving or not and why (a wrong port, a wrong password, no EXECUTE on pg_control_system(), a primary), and reads from the one that serves", async () => {
    const { url, onReplica } = await database()
    // A role that may not run the check's function: a grant the operator forgot.
    await run(url, 'revoke execute on function pg_control_system() from public')
    await replica.caughtUp()
    const replicas = [
      onReplica,
      `postgres://nobody:nothing@127.0.0.1:${await freePort()}/none`,
      as(onReplica, 'postgres', 'not-the-password'),
      as(onReplica, LIMITED.role, LIMITED.password),
      `${url}?application_name=not-a-replica`,
    ]
    const { store, changes } = await routedStore(url, replicas)
    const first = new Map<string, (typeof changes)[number]>()
    for (const change of changes) if (!first.has(change.replica)) first.set(change.replica, change)
    assert.deepEqual(first.get('replica-1'), { replica: 'replica-1', serving: true, reason: undefined })
    const reasons = [2, 3, 4, 5].map((n) => first.get(`replica-${n}`))
    assert.ok(reasons.every((change) => change?.serving === false))
    assert.match(reasons[0]?.reason ?? '', /^its check failed: .*ECONNREFUSED/)
    assert.match(reasons[1]?.reason ?? '', /^its check failed: password authentication failed/)
    assert.ok(!(reasons[1]?.reason ?? '').includes('not-the-password'), 'no password in a reason')
    assert.match(reasons[2]?.reason ?? '', /^its check failed: permission denied for function pg_control_system/)
    assert.equal(reasons[3]?.reason, 'not in recovery: a primary, or a promoted replica')
    const created = await store.pets.insertPet(DRAFT)
    await replica.caughtUp()
    assert.ok((await store.pets.findPet(created.id))?.includes('"name":"routed"'))
    const stats = store.readStats()
    assert.deepEqual(
      stats?.replicas.map(({ reads, serving }) => ({ reads, serving })),
      [{ reads: 1, serving: true }, ...Array.from({ length: 4 }, () => ({ reads: 0, serving: false }))],
    )
  })

  it('reports a replica of another cluster (another system identifier) and never reads from it', async () => {
    const { onReplica } = await database()
    // DATABASE_URL on another server: the replica follows `primary`, not it.
    const other = await createDatabase(testPostgresServerUrl())
    try {
      const plain = await openStore({ dialect: 'postgres', url: other.url, poolMax: 1, statementTimeoutMs: 2000 })
      await plain.migrate()
      await plain.close()
      const { store, changes } = await routedStore(other.url, [onReplica])
      assert.deepEqual(changes, [
        { replica: 'replica-1', serving: false, reason: 'not a replica of DATABASE_URL (another system identifier)' },
      ])
      await store.pets.listPets({ limit: 1 })
      assert.deepEqual(store.readStats()?.fallbacks, { unavailable: 1, wait: 0, error: 0 })
    } finally {
      await other.drop()
    }
  })

  it('reads from the primary when the replica does not answer, and a replayed create carries a position too', async () => {
    const { url } = await database()
    const { store, changes } = await routedStore(url, [`postgres://nobody:nothing@127.0.0.1:${await freePort()}/none`])
    assert.equal(changes.length, 1)
    const once = { scope: 'k', key: 'routing', fingerprint: 'f', now: Date.now(), expiredBefore: 0, maxRecords: 10 }
    const first = await store.pets.insertPetOnce(DRAFT, once)
    const again = await store.pets.insertPetOnce(DRAFT, once)
    assert.equal(first.outcome, 'created')
    assert.equal(again.outcome, 'replayed')
    if (first.outcome !== 'created' || again.outcome !== 'replayed') return
    assert.ok((again.position ?? -1n) >= (first.pet.position ?? 0n))
    const page = await store.pets.listPets({ limit: 100, atLeast: again.position })
    assert.ok(page.json.includes(`"id":${first.pet.id}`))
    assert.ok((page.position ?? -1n) >= (again.position ?? 0n), 'the page was read at least where the create is')
    assert.ok((await store.pets.findPet(first.pet.id, again.position))?.includes(`"id":${first.pet.id}`))
    assert.equal(store.readStats()?.replicas[0]?.serving, false)
    assert.ok((store.readStats()?.replicas[0]?.lagSeconds ?? 0) > 1, 'never caught up: unboundedly behind')
    assert.deepEqual(store.readStats()?.fallbacks, { unavailable: 2, wait: 0, error: 0 })
  })

  it('answers a create whose position cannot be read after its commit without a position, a first create and a replay alike', async () => {
    const { url, onReplica } = await database()
    // The service's role may not read the WAL position: every position read fails, after the commit.
    await run(url, 'revoke execute on function pg_current_wal_lsn() from public')
    await run(url, `grant select, insert, update, delete on all tables in schema public to ${LIMITED.role}`)
    await run(url, `grant usage on all sequences in schema public to ${LIMITED.role}`)
    await replica.caughtUp()
    const limited = as(url, LIMITED.role, LIMITED.password)
    const { store, changes } = await routedStore(limited, [as(onReplica, LIMITED.role, LIMITED.password)])
    assert.match(changes[0]?.reason ?? '', /^the primary's check failed: permission denied for function pg_current_wal_lsn/)
    const created = await store.pets.insertPet(DRAFT)
    assert.equal(created.position, undefined)
    const once = { scope: 'k', key: 'unpositioned', fingerprint: 'f', now: Date.now(), expiredBefore: 0, maxRecords: 10 }
    const first = await store.pets.insertPetOnce(DRAFT, once)
    const again = await store.pets.insertPetOnce(DRAFT, once)
    assert.deepEqual([first.outcome, again.outcome], ['created', 'replayed'])
    if (first.outcome !== 'created' || again.outcome !== 'replayed') return
    assert.equal(first.pet.position, undefined)
    assert.equal(again.position, undefined)
    const plain = await openStore({ dialect: 'postgres', url, poolMax: 1, statementTimeoutMs: 2000 })
    stores.push(plain)
    assert.ok((await plain.pets.findPet(created.id))?.includes('"name":"routed"'), 'the create is committed')
  })

  it('has no routing, no positions and no read stats without replicas', async () => {
    const { url } = await database()
    const plain = await openStore({ dialect: 'postgres', url, poolMax: 1, statementTimeoutMs: 2000 })
    stores.push(plain)
    const created = await plain.pets.insertPet(DRAFT)
    assert.equal(created.position, undefined)
    assert.equal((await plain.pets.listPets({ limit: 1 })).position, undefined)
    assert.equal(plain.readStats(), undefined)
  })

  // Last: a promotion cannot be undone.
  it('takes a promoted replica out although it has replayed everything the primary wrote (it is no longer in recovery)', async () => {
    const { url, onReplica } = await database()
    const { store, changes, reported } = await routedStore(url, [onReplica])
    assert.deepEqual(changes, [{ replica: 'replica-1', serving: true, reason: undefined }])
    const { id } = await store.pets.insertPet(DRAFT)
    await replica.caughtUp()
    await replica.promote()
    // The next check finds it promoted, at the position where the primary still is.
    await reported(2)
    assert.deepEqual(changes.at(-1), {
      replica: 'replica-1',
      serving: false,
      reason: 'not in recovery: a primary, or a promoted replica',
    })
    const before = store.readStats()?.replicas[0]?.reads
    assert.ok((await store.pets.findPet(id))?.includes('"name":"routed"'))
    assert.equal(store.readStats()?.replicas[0]?.reads, before, 'the read went to the primary')
  })
})
