// The TypeScript client's retries, observed for real: a recording node:http proxy on 127.0.0.1 sits
// between the client and the live server and notes every request that reaches it (method,
// Idempotency-Key, answer), so the test sees each attempt of one create on the wire.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import {
  call,
  describeEachDatabase,
  ownPostgresWithServer,
  startServer,
  TEST_DATABASES,
  type TestServer,
} from '../../../scripts/lib/test-server.js'
import { createKey } from '../../../src/commands/keys.js'
import { idempotencyLock } from '../../../src/store/postgres/postgres-pets.js'
import { AnimalStoreError, createClient, NetworkError, type RetryEvent } from '../src/index.js'
import { type Attempt, countNamed, freePort, relay } from './support/relay.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describeEachDatabase('TypeScript client retries on network errors', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  it('retries a create refused because nothing listens yet, with the same Idempotency-Key, and adds one pet', async () => {
    const port = await freePort()
    const proxy = relay(server.origin)
    const events: RetryEvent[] = []
    const client = createClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: server.key,
      onRetry: async (event) => {
        events.push(event)
        if (!proxy.server.listening) await proxy.listen(port)
      },
    })
    try {
      const pet = await client.createPet({ name: 'late riser', categoryId: 9223372036854775807n })
      assert.equal(pet.categoryId, 9223372036854775807n)
      assert.equal(events.length, 1)
      const refused = (events[0] as RetryEvent).error
      assert.ok(refused instanceof NetworkError, `a NetworkError, not ${refused}`)
      assert.equal(((refused.cause as Error).cause as { code?: string }).code, 'ECONNREFUSED')
      assert.equal(proxy.attempts.length, 1)
      assert.match(proxy.attempts[0]?.idempotencyKey ?? '', UUID)
      assert.equal(await countNamed(server, 'late riser'), 1)
    } finally {
      await proxy.close()
    }
  })

  it('retries a create whose 201 was lost on the way back, and the replay gives exactly one pet', async () => {
    const proxy = relay(server.origin, { count: 1, how: 'drop' })
    const baseUrl = `http://127.0.0.1:${await proxy.listen(0)}/v1`
    const events: RetryEvent[] = []
    const client = createClient({ baseUrl, apiKey: server.key, onRetry: (event) => void events.push(event) })
    try {
      const pet = await client.createPet({ name: 'lost answer', categoryId: 9007199254740993n })
      assert.equal(pet.categoryId, 9007199254740993n)
      assert.equal(events.length, 1)
      assert.deepEqual(
        proxy.attempts.map((attempt) => `${attempt.method} ${attempt.status}`),
        ['POST 201', 'POST 201'],
      )
      assert.match(proxy.attempts[0]?.idempotencyKey ?? '', UUID)
      assert.equal(proxy.attempts[1]?.idempotencyKey, proxy.attempts[0]?.idempotencyKey)
      assert.equal(await countNamed(server, 'lost answer'), 1)
    } finally {
      await proxy.close()
    }
  })

  it('gives up after the configured retries and throws NetworkError with the fetch error as cause, the request id and the Idempotency-Key', async () => {
    const port = await freePort()
    const events: RetryEvent[] = []
    const client = createClient({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: server.key,
      retries: 2,
      onRetry: (event) => {
        events.push(event)
      },
    })
    await assert.rejects(client.createPet({ name: 'never', categoryId: 1n }), (error: Error) => {
      assert.ok(error instanceof NetworkError)
      assert.ok(error.cause instanceof TypeError, 'fetch rejects with a TypeError')
      assert.equal((error.cause.cause as { code?: string }).code, 'ECONNREFUSED')
      assert.match(error.requestId, UUID)
      assert.match(error.idempotencyKey ?? '', UUID, 'the key to create again with later')
      return true
    })
    assert.deepEqual(
      events.map((event) => event.retryCount),
      [1, 2],
    )
  })
})

// The limiter counts in process memory, the same whatever the database, and its window is a real
// minute: this test waits out one Retry-After (up to 60 s), so it runs once, on SQLite.
describe('TypeScript client retries on 429', () => {
  let server: TestServer
  let proxy: ReturnType<typeof relay>
  let baseUrl: string
  before(async () => {
    server = await startServer({ rateLimitPerMinute: 1 })
    proxy = relay(server.origin)
    baseUrl = `http://127.0.0.1:${await proxy.listen(0)}/v1`
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'the one request of this minute')
  })
  after(async () => {
    await proxy.close()
    await server.close()
  })

  it('throws AnimalStoreError 429 rate_limited when retries are off', async () => {
    const client = createClient({ baseUrl, apiKey: server.key, retries: 0 })
    await assert.rejects(client.createPet({ name: 'impatient', categoryId: 1n }), (error: unknown) => {
      assert.ok(error instanceof AnimalStoreError)
      assert.equal(error.status, 429)
      assert.equal(error.code, 'rate_limited')
      assert.match(error.requestId, /\S/)
      assert.ok((error.retryAfterMs ?? 0) >= 1000, `retryAfterMs ${error.retryAfterMs}`)
      assert.match(error.headers.get('ratelimit') ?? '', /r=0/)
      return true
    })
  })

  it('throws at once, with retryAfterMs, when Retry-After is over maxRetryAfterMs', async () => {
    const client = createClient({ baseUrl, apiKey: server.key, maxRetryAfterMs: 500 })
    const started = Date.now()
    await assert.rejects(client.createPet({ name: 'capped', categoryId: 1n }), (error: unknown) => {
      assert.ok(error instanceof AnimalStoreError && error.code === 'rate_limited')
      assert.ok((error.retryAfterMs ?? 0) > 500, `retryAfterMs ${error.retryAfterMs}`)
      assert.match(error.idempotencyKey ?? '', UUID)
      return true
    })
    assert.ok(Date.now() - started < 1000, 'did not wait')
  })

  it('waits Retry-After seconds, then retries the create with the same Idempotency-Key, adding one pet', async () => {
    proxy.attempts.length = 0
    const events: RetryEvent[] = []
    // Up to a minute: above the default cap (10 s) and deadline (30 s), so both are raised.
    const client = createClient({
      baseUrl,
      apiKey: server.key,
      maxRetryAfterMs: 61_000,
      timeoutMs: 90_000,
      onRetry: (event) => void events.push(event),
    })
    const started = Date.now()
    const pet = await client.createPet({ name: 'patient', categoryId: -9223372036854775808n })
    const waited = Date.now() - started
    assert.equal(pet.categoryId, -9223372036854775808n)
    assert.deepEqual(
      proxy.attempts.map((attempt) => `${attempt.method} ${attempt.status}`),
      ['POST 429', 'POST 201'],
    )
    const [limited, accepted] = proxy.attempts as [Attempt, Attempt]
    assert.match(limited.idempotencyKey ?? '', UUID)
    assert.equal(accepted.idempotencyKey, limited.idempotencyKey, 'one key for every attempt of one create')
    assert.ok(waited >= (Number(limited.retryAfter) - 1) * 1000, `waited ${waited} ms for Retry-After ${limited.retryAfter}`)
    assert.equal(events.length, 1)
    assert.ok(events[0]?.error instanceof AnimalStoreError && events[0].error.code === 'rate_limited')
    assert.equal(await countNamed(server, 'patient'), 1)
  })
})

// A 409 needs a create in flight: on PostgreSQL the test itself holds the key's advisory lock, as
// the first attempt's transaction would, and lets go when the client reports its retry.
describe('TypeScript client retries on 409', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database: 'postgres' })
  })
  after(() => server.close())

  it('retries a create answered 409 idempotency_key_in_flight after Retry-After, adding one pet', async () => {
    const proxy = relay(server.origin)
    const baseUrl = `http://127.0.0.1:${await proxy.listen(0)}/v1`
    const { key: apiKey, record } = await createKey(server.store.apiKeys, 'in flight')
    const idempotencyKey = randomUUID()
    const events: RetryEvent[] = []
    try {
      const pet = await server.store.db.connection().execute(async (connection) => {
        await sql`begin`.execute(connection)
        await sql`select pg_advisory_xact_lock(${idempotencyLock(`key:${record.id}`, idempotencyKey)}::bigint)`.execute(
          connection,
        )
        const client = createClient({
          baseUrl,
          apiKey,
          onRetry: async (event) => {
            events.push(event)
            await sql`rollback`.execute(connection)
          },
        })
        return client.createPet({ name: 'waited its turn', categoryId: 1n }, { idempotencyKey })
      })
      assert.equal(pet.name, 'waited its turn')
      assert.deepEqual(
        proxy.attempts.map((attempt) => `${attempt.method} ${attempt.status} ${attempt.retryAfter}`),
        ['POST 409 1', 'POST 201 undefined'],
      )
      assert.ok(events[0]?.error instanceof AnimalStoreError && events[0].error.code === 'idempotency_key_in_flight')
      assert.equal(await countNamed(server, 'waited its turn'), 1)
    } finally {
      await proxy.close()
    }
  })
})

// A 503 needs the database gone: a PostgreSQL of this test's own, stopped and started again.
describe('TypeScript client retries on 503', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  const own = ownPostgresWithServer()

  it('retries a create answered 503 while the database is down, with the same Idempotency-Key, adding one pet', async () => {
    const proxy = relay(own.server.origin)
    const baseUrl = `http://127.0.0.1:${await proxy.listen(0)}/v1`
    const events: RetryEvent[] = []
    const client = createClient({
      baseUrl,
      apiKey: own.server.key,
      onRetry: async (event) => {
        events.push(event)
        if (events.length === 1) await own.postgres.start()
      },
    })
    try {
      await own.postgres.stop()
      const pet = await client.createPet({ name: 'outage', categoryId: 9007199254740993n })
      assert.equal(pet.categoryId, 9007199254740993n)
      const statuses = proxy.attempts.map((attempt) => attempt.status)
      assert.equal(statuses[0], 503)
      assert.equal(statuses.at(-1), 201)
      assert.ok(events[0]?.error instanceof AnimalStoreError && events[0].error.code === 'service_unavailable')
      assert.equal(events[0].error.retryAfterMs, 2000, 'Retry-After: 2 on the 503')
      const keys = new Set(proxy.attempts.map((attempt) => attempt.idempotencyKey))
      assert.equal(keys.size, 1, 'one key for every attempt of one create')
      assert.match([...keys][0] ?? '', UUID)
      assert.equal(await countNamed(own.server, 'outage'), 1)
    } finally {
      await proxy.close()
    }
  })
})
