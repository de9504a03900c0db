// POST /v1/pets with Idempotency-Key (README, "Behaviour where the specification is silent"): replay,
// reuse with another body, in-flight duplicates, per-key scope, restarts, expiry and malformed keys.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, it } from 'node:test'
import { sql } from 'kysely'
import {
  call,
  describeEachDatabase,
  freshDatabase,
  startServer,
  type TestServer,
  tempDir,
} from '../../scripts/lib/test-server.js'
import { generateApiKey } from '../../src/api-keys.js'
import { createKey } from '../../src/commands/keys.js'
import { IDEMPOTENCY_KEY_TTL_MS } from '../../src/http/routes/idempotency.js'
import { idempotencyLock } from '../../src/store/postgres/postgres-pets.js'

describeEachDatabase('POST /v1/pets with Idempotency-Key', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  const create = (target: TestServer, body: unknown, key: string, apiKey = target.key) =>
    call(target, 'POST', '/v1/pets', {
      body,
      key: apiKey,
      headers: { 'idempotency-key': key, 'content-type': 'application/json' },
    })
  const petsNamed = async (target: TestServer, name: string) =>
    (
      await sql<{ count: number | bigint | string }>`select count(*) as count from pets where name = ${name}`.execute(
        target.store.db,
      )
    ).rows.map((row) => Number(row.count))[0]

  it('returns the stored 201 (same body bytes, same Location) for a retry, and adds one pet', async () => {
    const key = randomUUID()
    const first = await create(server, { name: 'replayed', categoryId: 9007199254740993n }, key)
    const retry = await create(server, { name: 'replayed', categoryId: 9007199254740993n }, key)
    assert.equal(first.status, 201)
    assert.equal(retry.status, 201)
    assert.equal(retry.text, first.text)
    assert.equal(retry.headers.get('location'), first.headers.get('location'))
    // As Stripe does: the replay says it is one; the first answer does not.
    assert.equal(first.headers.get('idempotent-replayed'), null)
    assert.equal(retry.headers.get('idempotent-replayed'), 'true')
    assert.equal(first.exact.categoryId, 9007199254740993n)
    assert.equal(await petsNamed(server, 'replayed'), 1)
  })

  it('treats the same NewPet spelled differently (member order, 1.0, default status) as the same request', async () => {
    const key = randomUUID()
    const first = await create(server, '{"name":"spelled","categoryId":1}', key)
    const retry = await create(server, '{"status":"available","categoryId":1.0,"name":"spelled"}', key)
    assert.equal(first.status, 201)
    assert.equal(retry.text, first.text)
    assert.equal(await petsNamed(server, 'spelled'), 1)
  })

  it('returns 422 idempotency_key_reused when the key comes again with another body', async () => {
    const key = randomUUID()
    assert.equal((await create(server, { name: 'reused', categoryId: 1 }, key)).status, 201)
    const other = await create(server, { name: 'reused', categoryId: 2 }, key)
    assert.equal(other.status, 422)
    assert.equal(other.json.code, 'idempotency_key_reused')
    assert.equal(other.json.status, 422)
    assert.equal(await petsNamed(server, 'reused'), 1)
  })

  it('adds one pet for concurrent duplicates: one 201, the others its replay or 409 idempotency_key_in_flight', async () => {
    const key = randomUUID()
    const responses = await Promise.all(
      Array.from({ length: 12 }, () => create(server, { name: 'concurrent', categoryId: 3 }, key)),
    )
    const created = responses.filter((response) => response.status === 201)
    assert.ok(created.length >= 1)
    for (const response of created) assert.equal(response.text, created[0]?.text)
    for (const response of responses.filter((response) => response.status !== 201)) {
      assert.equal(response.status, 409)
      assert.equal(response.json.code, 'idempotency_key_in_flight')
    }
    // SQLite serializes the transactions (one writer): every duplicate gets the replay.
    if (database === 'sqlite') assert.equal(created.length, responses.length)
    assert.equal(await petsNamed(server, 'concurrent'), 1)
  })

  if (database === 'postgres') {
    it('returns 409 idempotency_key_in_flight with Retry-After while another transaction holds the key', async () => {
      const key = randomUUID()
      const { key: apiKey, record } = await createKey(server.store.apiKeys, 'holder')
      const holder = await server.store.db.connection().execute(async (connection) => {
        await sql`begin`.execute(connection)
        await sql`select pg_advisory_xact_lock(${idempotencyLock(`key:${record.id}`, key)}::bigint)`.execute(connection)
        const busy = await create(server, { name: 'in flight', categoryId: 4 }, key, apiKey)
        await sql`rollback`.execute(connection)
        return busy
      })
      assert.equal(holder.status, 409)
      assert.equal(holder.json.code, 'idempotency_key_in_flight')
      assert.equal(holder.headers.get('retry-after'), '1')
      assert.equal(await petsNamed(server, 'in flight'), 0)
      const retry = await create(server, { name: 'in flight', categoryId: 4 }, key, apiKey)
      assert.equal(retry.status, 201)
      assert.equal(await petsNamed(server, 'in flight'), 1)
    })
  }

  it('scopes keys per API key: two API keys with the same Idempotency-Key make two pets', async () => {
    const key = randomUUID()
    const { key: otherApiKey } = await createKey(server.store.apiKeys, 'other')
    const first = await create(server, { name: 'scoped', categoryId: 5 }, key)
    const second = await create(server, { name: 'scoped', categoryId: 5 }, key, otherApiKey)
    assert.equal(first.status, 201)
    assert.equal(second.status, 201)
    assert.notEqual(second.json.id, first.json.id)
    assert.equal(await petsNamed(server, 'scoped'), 2)
  })

  it('scopes API_KEYS entries by the key, not its position: reordering keeps each scope, rotating one out shares none', async () => {
    const dir = tempDir()
    const shared = await freshDatabase(database, dir.path)
    const [k1, k2] = [generateApiKey().key, generateApiKey().key]
    const started: TestServer[] = []
    const serverWith = async (apiKeys: string[]) => {
      const next = await startServer({ databaseConfig: shared.config, apiKeys })
      started.push(next)
      return next
    }
    try {
      const key = randomUUID()
      const a = await serverWith([k1, k2])
      const first = await create(a, { name: 'made by K1', categoryId: 1 }, key, k1)
      assert.equal(first.status, 201)
      const reordered = await serverWith([k2, k1])
      const replay = await create(reordered, { name: 'made by K1', categoryId: 1 }, key, k1)
      assert.equal(replay.status, 201)
      assert.equal(replay.text, first.text, 'K1 keeps its records when the list is reordered')
      const rotated = await serverWith([k2])
      const own = await create(rotated, { name: 'made by K2', categoryId: 5 }, key, k2)
      assert.equal(own.status, 201, "K2 in K1's old place does not inherit its records")
      assert.notEqual(own.json.id, first.json.id)
      const copy = await create(rotated, { name: 'made by K1', categoryId: 1 }, key, k2)
      assert.equal(copy.status, 422, "K2 is held to its own request, not replayed K1's")
      assert.equal(await petsNamed(rotated, 'made by K1'), 1)
    } finally {
      for (const each of started) await each.close()
      await shared.drop()
      dir.remove()
    }
  })

  it('replays after a restart: a new server on the same database answers the retry', async () => {
    const dir = tempDir()
    const shared = await freshDatabase(database, dir.path)
    try {
      const a = await startServer({ databaseConfig: shared.config })
      const key = randomUUID()
      const first = await create(a, { name: 'restart', categoryId: 6 }, key)
      const apiKey = a.key
      await a.close()
      const b = await startServer({ databaseConfig: shared.config })
      try {
        const retry = await create(b, { name: 'restart', categoryId: 6 }, key, apiKey)
        assert.equal(first.status, 201)
        assert.equal(retry.status, 201)
        assert.equal(retry.text, first.text)
        assert.equal(retry.headers.get('location'), first.headers.get('location'))
        assert.equal(await petsNamed(b, 'restart'), 1)
      } finally {
        await b.close()
      }
    } finally {
      await shared.drop()
      dir.remove()
    }
  })

  it('forgets a key after 24 h: the same key then creates a new pet, and expired records are deleted', async () => {
    const key = randomUUID()
    const first = await create(server, { name: 'expired', categoryId: 7 }, key)
    const age = BigInt(IDEMPOTENCY_KEY_TTL_MS + 1)
    await sql`update idempotency_keys set created_at = created_at - ${age} where idempotency_key = ${key}`.execute(
      server.store.db,
    )
    const again = await create(server, { name: 'expired', categoryId: 8 }, key)
    assert.equal(again.status, 201)
    assert.notEqual(again.json.id, first.json.id)
    assert.equal(await petsNamed(server, 'expired'), 2)

    await sql`update idempotency_keys set created_at = created_at - ${age} where idempotency_key = ${key}`.execute(
      server.store.db,
    )
    assert.equal((await create(server, { name: 'sweeper', categoryId: 9 }, randomUUID())).status, 201)
    const left = await sql`select 1 from idempotency_keys where idempotency_key = ${key}`.execute(server.store.db)
    assert.equal(left.rows.length, 0)
  })

  for (const [what, value] of [
    ['empty', ''],
    ['longer than 255 characters', 'k'.repeat(256)],
    ['holding a space', 'a b'],
    ['holding a tab', 'a\tb'],
  ]) {
    it(`returns 400 invalid_request naming Idempotency-Key when it is ${what}`, async () => {
      const response = await create(server, { name: 'malformed', categoryId: 1 }, value as string)
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_request')
      assert.deepEqual(
        response.json.details.map((detail: { in: string; field: string }) => [detail.in, detail.field]),
        [['header', 'idempotency-key']],
      )
      assert.equal(await petsNamed(server, 'malformed'), 0)
    })
  }

  it('accepts a 255-character key', async () => {
    assert.equal((await create(server, { name: 'long key', categoryId: 1 }, 'k'.repeat(255))).status, 201)
  })
})
