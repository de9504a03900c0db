// Idempotency-Key records are bounded: an API key holds at most IDEMPOTENCY_RECORDS_PER_KEY of them
// (past it the key's oldest record makes room: a busy client is never refused), and expired ones are
// swept in the background without any further create.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, it } from 'node:test'
import { sql } from 'kysely'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'
import { IDEMPOTENCY_KEY_TTL_MS } from '../../src/http/routes/idempotency.js'
import { startIdempotencySweeper } from '../../src/store/idempotency-sweeper.js'

const LIMIT = 5

describeEachDatabase('Idempotency-Key records: limit per API key and background sweep', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database, idempotencyRecordsPerKey: LIMIT })
  })
  after(() => server.close())

  const create = (body: unknown, key: string, apiKey = server.key) =>
    call(server, 'POST', '/v1/pets', { body, key: apiKey, headers: { 'idempotency-key': key } })
  const count = async (query: ReturnType<typeof sql<{ n: number | bigint | string }>>) =>
    Number((await query.execute(server.store.db)).rows[0]?.n)
  const petsNamed = (name: string) => count(sql<{ n: number }>`select count(*) as n from pets where name = ${name}`)
  const records = () => count(sql<{ n: number }>`select count(*) as n from idempotency_keys`)

  it('past the limit, evicts the oldest record of the API key instead of refusing: never locked out, storage bounded', async () => {
    const keys = Array.from({ length: LIMIT }, () => randomUUID())
    for (const key of keys) assert.equal((await create({ name: 'capped', categoryId: 1 }, key)).status, 201)
    const replay = await create({ name: 'capped', categoryId: 1 }, keys[1] as string)
    assert.equal(replay.status, 201, 'a retry of a stored key is answered at the limit')
    assert.equal(replay.headers.get('idempotent-replayed'), 'true')

    // Three times the limit more, as a client that sends a new key on every create does.
    const later = Array.from({ length: 3 * LIMIT }, () => randomUUID())
    for (const key of later) assert.equal((await create({ name: 'later', categoryId: 1 }, key)).status, 201, 'never refused')
    assert.equal(await records(), LIMIT, 'the API key still holds LIMIT records')
    assert.equal(server.store.idempotencyRecordsEvicted(), 3 * LIMIT, 'each eviction is counted')
    const newest = later.at(-1) as string
    const again = await create({ name: 'later', categoryId: 1 }, newest)
    assert.equal(again.headers.get('idempotent-replayed'), 'true', 'the newest records are kept')
    assert.equal(await petsNamed('later'), 3 * LIMIT, 'a replay of a kept key created nothing')

    const plain = await call(server, 'POST', '/v1/pets', { body: { name: 'without a key', categoryId: 1 } })
    assert.equal(plain.status, 201, 'creates without an Idempotency-Key are not limited')
    const { key: otherApiKey } = await createKey(server.store.apiKeys, 'other')
    assert.equal((await create({ name: 'other key', categoryId: 1 }, randomUUID(), otherApiKey)).status, 201)
    assert.equal(await records(), LIMIT + 1, 'per API key: the other key evicted nothing')
  })

  it('holds exactly LIMIT records under 5 rounds of 40 concurrent creates with distinct keys, each answered 201', async () => {
    const { key: apiKey } = await createKey(server.store.apiKeys, 'concurrent')
    const before = await records()
    const evictedBefore = server.store.idempotencyRecordsEvicted()
    const held: number[] = []
    for (let round = 0; round < 5; round++) {
      const answers = await Promise.all(
        Array.from({ length: 40 }, (_, i) => create({ name: `concurrent ${round}-${i}`, categoryId: 1 }, randomUUID(), apiKey)),
      )
      assert.deepEqual(
        answers.map((answer) => answer.status),
        Array(40).fill(201),
        'never refused',
      )
      held.push((await records()) - before)
    }
    assert.deepEqual(held, Array(5).fill(LIMIT), 'the API key holds exactly LIMIT records after each round')
    assert.equal(server.store.idempotencyRecordsEvicted() - evictedBefore, 200 - LIMIT, 'one eviction per create past it')
  })

  it("keeps each API key's count exact through writes that do not know it (the previous release, a sweep)", async () => {
    // As a release without the count writes: plain inserts and deletes of records.
    const record = { request_hash: 'h', created_at: String(Date.now()), pet_id: '1' }
    await server.store.db
      .insertInto('idempotency_keys')
      .values(['a', 'b', 'c'].map((key) => ({ ...record, api_key_id: 'raw-scope', idempotency_key: key })))
      .execute()
    await server.store.db.deleteFrom('idempotency_keys').where('idempotency_key', '=', 'b').execute()
    const counted = await sql<{ api_key_id: string; n: number | bigint | string }>`
      select api_key_id, count(*) as n from idempotency_keys group by api_key_id order by api_key_id`.execute(server.store.db)
    const kept = await server.store.db
      .selectFrom('idempotency_key_counts')
      .selectAll()
      .where('records', '>', '0')
      .orderBy('api_key_id')
      .execute()
    assert.deepEqual(
      kept.map((row) => [row.api_key_id, Number(row.records)]),
      counted.rows.map((row) => [row.api_key_id, Number(row.n)]),
    )
    assert.ok(kept.some((row) => row.api_key_id === 'raw-scope' && Number(row.records) === 2))
  })

  it('sweeps expired records in bounded batches on its own timer, with no create after them', async () => {
    const age = BigInt(IDEMPOTENCY_KEY_TTL_MS + 1)
    await sql`update idempotency_keys set created_at = created_at - ${age}`.execute(server.store.db)
    const expired = await records()
    assert.ok(expired > LIMIT, `${expired} expired records to sweep`)
    const batches: number[] = []
    const errors: unknown[] = []
    const pets = {
      deleteExpiredIdempotencyRecords: async (expiredBefore: number, limit: number) => {
        const deleted = await server.store.pets.deleteExpiredIdempotencyRecords(expiredBefore, limit)
        batches.push(deleted)
        return deleted
      },
    }
    const sweeper = startIdempotencySweeper(pets, {
      ttlMs: IDEMPOTENCY_KEY_TTL_MS,
      intervalMs: 20,
      batch: 2,
      onError: (error) => errors.push(error),
    })
    try {
      const deadline = Date.now() + 10_000
      while ((await records()) > 0) {
        assert.ok(Date.now() < deadline, 'swept within 10 s')
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    } finally {
      await sweeper.stop()
    }
    assert.ok(
      batches.every((deleted) => deleted <= 2),
      `batches: ${batches}`,
    )
    assert.equal(
      batches.reduce((sum, deleted) => sum + deleted, 0),
      expired,
    )
    assert.deepEqual(errors, [])
    const counts = await server.store.db.selectFrom('idempotency_key_counts').select('records').execute()
    assert.deepEqual(
      counts.map((row) => Number(row.records)).filter((n) => n !== 0),
      [],
      'the sweep brought every count to 0',
    )
    // The key is free again: a new record fits under the limit.
    assert.equal((await create({ name: 'after the sweep', categoryId: 1 }, randomUUID())).status, 201)
  })

  it('leaves records that have not expired', async () => {
    const before = await records()
    assert.ok(before > 0)
    const deleted = await server.store.pets.deleteExpiredIdempotencyRecords(Date.now() - IDEMPOTENCY_KEY_TTL_MS, 100)
    assert.equal(deleted, 0)
    assert.equal(await records(), before)
  })
})
