// Rate limiting per API key: RATE_LIMIT_PER_MINUTE requests a minute, then 429 rate_limited with
// Retry-After and the IETF RateLimit-Policy / RateLimit fields; other keys unaffected; 0 = off.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'

describeEachDatabase('rate limiting per API key', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database, rateLimitPerMinute: 5 })
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

  it('never limits requests that fail authentication (they are refused before counting)', async () => {
    for (let i = 0; i < 8; i++) {
      const response = await call(server, 'GET', '/v1/pets', { key: null })
      assert.equal(response.status, 401)
      assert.equal(response.headers.get('ratelimit'), null)
    }
  })

  it('sends no RateLimit fields and never 429 when RATE_LIMIT_PER_MINUTE is 0', async () => {
    const unlimited = await startServer({ database, rateLimitPerMinute: 0 })
    try {
      for (let i = 0; i < 20; i++) {
        const response = await call(unlimited, 'GET', '/v1/pets')
        assert.equal(response.status, 200)
        assert.equal(response.headers.get('ratelimit'), null)
      }
    } finally {
      await unlimited.close()
    }
  })
})
