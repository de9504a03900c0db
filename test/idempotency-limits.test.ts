// Idempotency-Key records are bounded: an API key holds at most IDEMPOTENCY_RECORDS_PER_KEY of them
// (past it a new key is refused 429 idempotency_key_limit_reached, never accepted without its
// record), and expired ones are swept in the background without any further create.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, it } from 'node:test'
import { sql } from 'kysely'
import { createKey } from '../src/commands/keys.js'
import { IDEMPOTENCY_KEY_TTL_MS } from '../src/http/idempotency.js'
import { startIdempotencySweeper } from '../src/store/idempotency-sweeper.js'
import { call, describeEachDatabase, startServer, type TestServer } from './helpers.js'

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

  it('refuses a new Idempotency-Key past the limit with 429 idempotency_key_limit_reached, creating nothing', async () => {
    const keys = Array.from({ length: LIMIT }, () => randomUUID())
    for (const key of keys) assert.equal((await create({ name: 'capped', categoryId: 1 }, key)).status, 201)
    const replay = await create({ name: 'capped', categoryId: 1 }, keys[0] as string)
    assert.equal(replay.status, 201, 'a retry of a stored key is still answered at the limit')

    const refused = await create({ name: 'one too many', categoryId: 1 }, randomUUID())
    assert.equal(refused.status, 429)
    assert.equal(refused.json.code, 'idempotency_key_limit_reached')
    assert.match(refused.headers.get('retry-after') ?? '', /^\d+$/)
    assert.equal(await petsNamed('one too many'), 0, 'no pet without its record')
    assert.equal(await records(), LIMIT, 'no record past the limit')

    const plain = await call(server, 'POST', '/v1/pets', { body: { name: 'without a key', categoryId: 1 } })
    assert.equal(plain.status, 201, 'creates without an Idempotency-Key are not limited')
    const { key: otherApiKey } = await createKey(server.store.apiKeys, 'other')
    assert.equal((await create({ name: 'other key', categoryId: 1 }, randomUUID(), otherApiKey)).status, 201, 'per API key')
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
