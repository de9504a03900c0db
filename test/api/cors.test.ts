// CORS (README "Configuration", CORS_ORIGINS): preflights answered without a key, the allowed and
// exposed headers, no allow header for other origins, and nothing at all when CORS_ORIGINS is unset.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { CORS_ALLOWED_HEADERS, CORS_EXPOSED_HEADERS } from '../../src/http/pipeline/cors.js'

const APP = 'https://app.example.com'
const DEV = 'http://localhost:5173'
const preflight = (origin: string, method = 'POST') => ({
  key: null,
  headers: {
    origin,
    'access-control-request-method': method,
    'access-control-request-headers': 'authorization, content-type, idempotency-key',
  },
})

function corsHeaders(headers: Headers): string[] {
  return [...headers.keys()].filter((name) => name.startsWith('access-control-'))
}

describe('CORS with CORS_ORIGINS set', () => {
  let server: TestServer
  before(async () => {
    server = await startServer({ corsOrigins: [APP, DEV] })
  })
  after(() => server.close())

  it('answers a preflight from a listed origin 204 without a key, allowing the key, JSON and Idempotency-Key', async () => {
    for (const origin of [APP, DEV]) {
      const response = await call(server, 'OPTIONS', '/v1/pets', preflight(origin))
      assert.equal(response.status, 204)
      assert.equal(response.text, '')
      assert.equal(response.headers.get('access-control-allow-origin'), origin)
      assert.match(response.headers.get('access-control-allow-methods') ?? '', /\bPOST\b/)
      const allowed = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/)
      for (const name of ['authorization', 'content-type', 'idempotency-key']) assert.ok(allowed.includes(name), name)
      assert.deepEqual(
        allowed,
        CORS_ALLOWED_HEADERS.map((name) => name.toLowerCase()),
      )
      assert.match(response.headers.get('vary') ?? '', /origin/i)
      assert.match(response.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/)
      assert.equal(response.headers.get('www-authenticate'), null)
    }
  })

  it('answers a preflight for a deprecated or unknown path 204 too (no key, so nothing is revealed)', async () => {
    for (const path of ['/v1/pets/1', '/v1/nothing']) {
      const response = await call(server, 'OPTIONS', path, preflight(APP, 'GET'))
      assert.equal(response.status, 204, path)
      assert.equal(response.headers.get('access-control-allow-origin'), APP)
    }
  })

  it('gives an origin not listed no Access-Control-Allow-Origin, on a preflight or a request', async () => {
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.example', 'null']) {
      const answered = await call(server, 'OPTIONS', '/v1/pets', preflight(origin))
      assert.equal(answered.status, 204)
      assert.equal(answered.headers.get('access-control-allow-origin'), null, origin)
      const listed = await call(server, 'GET', '/v1/pets', { headers: { origin } })
      assert.equal(listed.status, 200)
      assert.equal(listed.headers.get('access-control-allow-origin'), null, origin)
    }
  })

  it('lets a page read the response and its paging, limit, deprecation and tracing headers', async () => {
    const response = await call(server, 'GET', '/v1/pets', { headers: { origin: APP } })
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('access-control-allow-origin'), APP)
    assert.deepEqual(
      (response.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/).sort(),
      [...CORS_EXPOSED_HEADERS].sort(),
    )
    for (const name of [
      'Link',
      'Location',
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'Deprecation',
      'Sunset',
      'X-Request-Id',
      'Idempotent-Replayed',
    ]) {
      assert.ok(CORS_EXPOSED_HEADERS.includes(name), name)
    }
    assert.equal(response.headers.get('access-control-allow-methods'), null, 'preflight headers only on preflights')
  })

  it('lets a page read a 401 too, and its WWW-Authenticate challenge (the error is a normal response, not a CORS failure)', async () => {
    const response = await call(server, 'GET', '/v1/pets', { key: null, headers: { origin: APP } })
    assert.equal(response.status, 401)
    assert.equal(response.headers.get('access-control-allow-origin'), APP)
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer realm="animal-store"/)
    assert.ok((response.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/).includes('WWW-Authenticate'))
  })

  it('still asks for a key on an OPTIONS that is not a preflight, then answers 405 with Allow', async () => {
    const plain: Array<Record<string, string>> = [{}, { origin: APP }, { 'access-control-request-method': 'POST' }]
    for (const headers of plain) {
      const anonymous = await call(server, 'OPTIONS', '/v1/pets', { key: null, headers })
      assert.equal(anonymous.status, 401, JSON.stringify(headers))
      assert.equal(anonymous.json.code, 'missing_api_key')
    }
    const keyed = await call(server, 'OPTIONS', '/v1/pets', {})
    assert.equal(keyed.status, 405)
    assert.equal(keyed.headers.get('allow'), 'GET, HEAD, POST')
    assert.equal((await call(server, 'OPTIONS', '/v1/nothing', {})).status, 404)
  })
})

describe('CORS without CORS_ORIGINS (the default)', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  it('sends no Access-Control-* header at all, and a preflight needs a key like any request', async () => {
    const answered = await call(server, 'OPTIONS', '/v1/pets', preflight(APP))
    assert.equal(answered.status, 401)
    assert.deepEqual(corsHeaders(answered.headers), [])
    const listed = await call(server, 'GET', '/v1/pets', { headers: { origin: APP } })
    assert.equal(listed.status, 200)
    assert.deepEqual(corsHeaders(listed.headers), [])
    assert.equal(listed.headers.get('vary'), null)
  })

  it('does not even register @fastify/cors (no cost on the request path)', () => {
    assert.equal(server.app.hasPlugin('@fastify/cors'), false)
  })
})

describe('README: CORS_ORIGINS', () => {
  it('names exactly the request headers allowed and the response headers exposed', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')
    const row = readme.split('\n').find((line) => line.startsWith('| `CORS_ORIGINS` |')) ?? ''
    const [, sent = '', read = ''] = /may send (.*) and read (.*)\. \|$/.exec(row) ?? []
    const names = (text: string) => [...text.matchAll(/`([A-Za-z-]+)`/g)].map(([, name]) => name)
    assert.deepEqual(names(sent), CORS_ALLOWED_HEADERS)
    assert.deepEqual(names(read), CORS_EXPOSED_HEADERS)
  })
})
