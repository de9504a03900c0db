// Bearer authentication (docs/specification.md, Authentication; RFC 6750): required on every
// operation, checked before any other outcome under /v1, with a WWW-Authenticate challenge on every 401.
import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'
import { DEFAULT_AUTH_FAILURES_PER_MINUTE } from '../../src/config.js'

const CHALLENGE = 'Bearer realm="animal-store"'
const INVALID_CHALLENGE = /^Bearer realm="animal-store", error="invalid_token"/

describeEachDatabase('bearer authentication', (database) => {
  let server: TestServer
  const configuredKey = 'platform-injected-key-0123456789'
  before(async () => {
    server = await startServer({ database, apiKeys: [configuredKey], keyRefreshMs: 100 })
  })
  after(() => server.close())

  const operations: Array<[string, string, unknown?]> = [
    ['GET', '/v1/pets'],
    ['POST', '/v1/pets', { name: 'x', categoryId: 1 }],
    ['GET', '/v1/pets/1'],
  ]

  for (const [method, path, body] of operations) {
    it(`${method} ${path} without a key returns 401 missing_api_key with a challenge`, async () => {
      const response = await call(server, method, path, { key: null, body })
      assert.equal(response.status, 401)
      assert.equal(response.json.code, 'missing_api_key')
      assert.equal(response.headers.get('www-authenticate'), CHALLENGE)
    })

    it(`${method} ${path} with a wrong key returns 401 invalid_api_key with error="invalid_token"`, async () => {
      const response = await call(server, method, path, { key: `ask_${'A'.repeat(43)}`, body })
      assert.equal(response.status, 401)
      assert.equal(response.json.code, 'invalid_api_key')
      assert.match(response.headers.get('www-authenticate') ?? '', INVALID_CHALLENGE)
    })
  }

  for (const authorization of ['bearer KEY', 'BEARER KEY', 'Bearer  KEY', 'BeArEr KEY']) {
    it(`accepts the scheme written "${authorization.replace('KEY', '…')}" (case-insensitive)`, async () => {
      const response = await call(server, 'GET', '/v1/pets', { authorization: authorization.replace('KEY', server.key) })
      assert.equal(response.status, 200)
    })
  }

  for (const [label, authorization, code] of [
    ['Basic credentials', 'Basic dXNlcjpwYXNz', 'missing_api_key'],
    ['an empty header', '', 'missing_api_key'],
    ['the scheme alone', 'Bearer', 'missing_api_key'],
    ['the key alone, no scheme', 'KEY', 'missing_api_key'],
    ['a key with a space inside', 'Bearer ask_abc def', 'invalid_api_key'],
    ['a key with a comma', 'Bearer KEY,KEY', 'invalid_api_key'],
    ['the key with one character changed', 'Bearer CHANGED', 'invalid_api_key'],
    ['the key truncated', 'Bearer TRUNCATED', 'invalid_api_key'],
    ['the key with a suffix', 'Bearer KEYx', 'invalid_api_key'],
  ] as const) {
    it(`refuses ${label} with 401 ${code}`, async () => {
      const changed = server.key.slice(0, -1) + (server.key.endsWith('A') ? 'B' : 'A')
      const value = authorization
        .replace('CHANGED', changed)
        .replace('TRUNCATED', server.key.slice(0, -1))
        .replace(/KEY/g, server.key)
      const response = await call(server, 'GET', '/v1/pets', { authorization: value })
      assert.equal(response.status, 401)
      assert.equal(response.json.code, code)
      assert.ok(response.headers.get('www-authenticate')?.startsWith(CHALLENGE))
    })
  }

  it('accepts a key configured in API_KEYS', async () => {
    const response = await call(server, 'GET', '/v1/pets', { key: configuredKey })
    assert.equal(response.status, 200)
  })

  it('accepts a key stored after start-up at once, and refuses it once revoked (within the reload bound)', async () => {
    const { key, record } = await createKey(server.store.apiKeys, 'late')
    assert.equal((await call(server, 'GET', '/v1/pets', { key })).status, 200)
    await server.store.apiKeys.revokeApiKey(record.id, new Date().toISOString())
    const deadline = Date.now() + 2000
    let status = 200
    while (status === 200 && Date.now() < deadline) {
      status = (await call(server, 'GET', '/v1/pets', { key })).status
    }
    assert.equal(status, 401)
  })

  it('checks the key before routing: an unknown path under /v1 without a key is 401, not 404', async () => {
    const response = await call(server, 'GET', '/v1/nothing-here', { key: null })
    assert.equal(response.status, 401)
    assert.equal(response.json.code, 'missing_api_key')
  })

  it('checks the key before the method: DELETE /v1/pets without a key is 401, not 405', async () => {
    const response = await call(server, 'DELETE', '/v1/pets', { key: null })
    assert.equal(response.status, 401)
  })

  it('checks the key before the body: invalid JSON without a key is 401, not 400', async () => {
    const response = await call(server, 'POST', '/v1/pets', {
      key: null,
      body: '{oops',
      headers: { 'content-type': 'application/json' },
    })
    assert.equal(response.status, 401)
  })

  it('checks the key before validation: a bad query without a key is 401', async () => {
    const response = await call(server, 'GET', '/v1/pets?limit=0', { key: null })
    assert.equal(response.status, 401)
  })

  it('serves the probes and the OpenAPI document without a key', async () => {
    for (const path of ['/healthz', '/readyz', '/v1/openapi.json']) {
      const response = await call(server, 'GET', path, { key: null })
      assert.equal(response.status, 200, path)
    }
  })

  it("gives each 401 the address's RateLimit fields (policy auth), one fewer left each time", async () => {
    const first = await call(server, 'GET', '/v1/pets', { key: null })
    const second = await call(server, 'GET', '/v1/pets', { key: `ask_${'B'.repeat(43)}` })
    for (const response of [first, second]) {
      assert.equal(response.status, 401)
      assert.equal(response.headers.get('ratelimit-policy'), `auth;q=${DEFAULT_AUTH_FAILURES_PER_MINUTE};w=60`)
    }
    const remaining = (response: typeof first) =>
      Number(/^auth;r=(\d+);t=\d+$/.exec(response.headers.get('ratelimit') ?? '')?.[1])
    assert.ok(remaining(first) < DEFAULT_AUTH_FAILURES_PER_MINUTE, first.headers.get('ratelimit') ?? 'no RateLimit')
    assert.equal(remaining(second), remaining(first) - 1)
  })

  it('keeps the connection of a 401 that left no body unread, and answers the next request on it', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number | undefined; reused: boolean }>((resolve, reject) => {
        const sent = request(`${server.origin}/v1/pets?limit=1`, { agent, headers }, (response) => {
          response.resume().on('end', () => resolve({ status: response.statusCode, reused: sent.reusedSocket }))
        })
        sent.on('error', reject).end()
      })
    try {
      assert.deepEqual(await get({}), { status: 401, reused: false })
      assert.deepEqual(await get({ authorization: `Bearer ${server.key}` }), { status: 200, reused: true })
    } finally {
      agent.destroy()
    }
  })

  it('closes the connection of a 401 to a request whose body it did not read', async () => {
    const response = await call(server, 'POST', '/v1/pets', { key: null, body: { name: 'x', categoryId: 1 } })
    assert.equal(response.status, 401)
    assert.equal(response.headers.get('connection'), 'close')
  })

  it('never echoes the presented key in the response', async () => {
    const secret = `ask_${'Z'.repeat(43)}`
    const response = await call(server, 'GET', '/v1/pets', { key: secret })
    assert.equal(response.status, 401)
    assert.ok(!response.text.includes(secret))
    assert.ok(![...response.headers.values()].some((value) => value.includes(secret)))
  })
})
