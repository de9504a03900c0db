// Rate limiting per API key: the key's own limit (keys create --rate-limit, API_KEYS
// `KEY:rate-limit=N`) or else RATE_LIMIT_PER_MINUTE requests a minute, then 429 rate_limited with
// Retry-After and the IETF RateLimit-Policy / RateLimit fields; other keys unaffected; 0 = off.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'

/** An API_KEYS entry with its own limit of 2 a minute. */
const CONFIGURED_KEY = 'rate-limited-key-Zr0Q9YbVxk1mN4tU'

/** Sends `count` listPets with `key`, asserting each is 200 and counts down from `quota` in RateLimit-Policy / RateLimit. */
async function countDown(server: TestServer, key: string, quota: number, count = quota): Promise<void> {
  for (let i = 1; i <= count; i++) {
    const response = await call(server, 'GET', '/v1/pets', { key })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('ratelimit-policy'), `default;q=${quota};w=60`)
    assert.match(response.headers.get('ratelimit') ?? '', new RegExp(`^default;r=${quota - i};t=\\d+$`))
  }
}

describeEachDatabase('rate limiting per API key', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database, rateLimitPerMinute: 5, apiKeys: [`${CONFIGURED_KEY}:rate-limit=2`] })
  })
  after(() => server.close())

  it('counts down in RateLimit, then answers 429 rate_limited with Retry-After, for that key only', async () => {
    for (let remaining = 4; remaining >= 0; remaining--) {
      const response = await call(server, 'GET', '/v1/pets')
      assert.equal(response.status, 200)
      assert.equal(response.headers.get('ratelimit-policy'), 'default;q=5;w=60')
      assert.match(response.headers.get('ratelimit') ?? '', new RegExp(`^default;r=${remaining};t=\\d+$`))
    }
    const limited = await call(server, 'POST', '/v1/pets', { body: { name: 'x', categoryId: 1 } })
    assert.equal(limited.status, 429)
    assert.equal(limited.json.code, 'rate_limited')
    const retryAfter = Number(limited.headers.get('retry-after'))
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 0 && retryAfter <= 60, `Retry-After ${retryAfter}`)
    assert.match(limited.headers.get('ratelimit') ?? '', new RegExp(`^default;r=0;t=${retryAfter}$`))

    const list = await call(server, 'GET', '/v1/pets?limit=100')
    assert.equal(list.status, 429, 'still limited')
    const other = await createKey(server.store.apiKeys, 'other client')
    assert.equal((await call(server, 'GET', '/v1/pets', { key: other.key })).status, 200, 'another key has its own quota')
  })

  it("never counts requests that fail authentication against a key's limit (they are refused before counting)", async () => {
    for (let i = 0; i < 8; i++) {
      const response = await call(server, 'GET', '/v1/pets', { key: null })
      assert.equal(response.status, 401)
      assert.match(response.headers.get('ratelimit') ?? '', /^auth;/, "the address's failures, not a key's requests")
    }
  })

  it('holds a key with its own limit to that limit, shown in its RateLimit fields, while others keep the default', async () => {
    const lower = await createKey(server.store.apiKeys, 'quiet client', { scope: 'write', rateLimit: 3 })
    const higher = await createKey(server.store.apiKeys, 'busy client', { scope: 'read', rateLimit: 8 })
    await countDown(server, lower.key, 3)
    const limited = await call(server, 'GET', '/v1/pets', { key: lower.key })
    assert.equal(limited.status, 429)
    assert.equal(limited.headers.get('ratelimit-policy'), 'default;q=3;w=60')
    await countDown(server, higher.key, 8)
    assert.equal((await call(server, 'GET', '/v1/pets', { key: higher.key })).status, 429, 'past its own 8')
    const other = await createKey(server.store.apiKeys, 'default client')
    await countDown(server, other.key, 5, 1)
  })

  it('holds an API_KEYS entry with rate-limit=2 to 2 a minute', async () => {
    await countDown(server, CONFIGURED_KEY, 2)
    const limited = await call(server, 'GET', '/v1/pets', { key: CONFIGURED_KEY })
    assert.equal(limited.status, 429)
    assert.equal(limited.json.code, 'rate_limited')
  })

  it('never limits a key whose own limit is 0, and sends it no RateLimit fields', async () => {
    const { key } = await createKey(server.store.apiKeys, 'load test', { scope: 'write', rateLimit: 0 })
    for (let i = 0; i < 12; i++) {
      const response = await call(server, 'GET', '/v1/pets', { key })
      assert.equal(response.status, 200)
      assert.equal(response.headers.get('ratelimit'), null)
      assert.equal(response.headers.get('ratelimit-policy'), null)
    }
  })

  it('sends no RateLimit fields and never 429 when RATE_LIMIT_PER_MINUTE is 0, except to a key with its own limit', async () => {
    const unlimited = await startServer({ database, rateLimitPerMinute: 0 })
    try {
      for (let i = 0; i < 20; i++) {
        const response = await call(unlimited, 'GET', '/v1/pets')
        assert.equal(response.status, 200)
        assert.equal(response.headers.get('ratelimit'), null)
      }
      const { key } = await createKey(unlimited.store.apiKeys, 'capped', { scope: 'write', rateLimit: 2 })
      await countDown(unlimited, key, 2)
      assert.equal((await call(unlimited, 'GET', '/v1/pets', { key })).status, 429)
    } finally {
      await unlimited.close()
    }
  })
})
