// The headers every client can count on (README "Behaviour"): X-Request-Id on every response, the
// 408/431 written on the raw socket included; Cache-Control: no-store and X-Content-Type-Options:
// nosniff on API and error responses; and gzip/Brotli compression of large bodies, byte-exact.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { COMPRESSION_THRESHOLD_BYTES } from '../../src/http/pipeline/compression.js'
import { rawExchange } from '../fuzz/fuzz-http.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** One GET over node:http, which (unlike fetch) leaves a compressed body as it came. */
function get(server: TestServer, path: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(server.origin + path, { headers: { authorization: `Bearer ${server.key}`, ...headers } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end()
    },
  )
}

describe('X-Request-Id, Cache-Control and X-Content-Type-Options', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  const answers: Array<[string, string, string, { key?: null; body?: unknown }, number]> = [
    ['a list', 'GET', '/v1/pets', {}, 200],
    ['a create', 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } }, 201],
    ['a deprecated read', 'GET', '/v1/pets/1', {}, 200],
    ['a 400', 'GET', '/v1/pets?limit=0', {}, 400],
    ['a 401', 'GET', '/v1/pets', { key: null }, 401],
    ['a 404 for a pet', 'GET', '/v1/pets/999999', {}, 404],
    ['a 404 for an unknown path under /v1', 'GET', '/v1/nothing', {}, 404],
    ['a 404 outside /v1', 'GET', '/nothing', {}, 404],
    ['a 405', 'DELETE', '/v1/pets', {}, 405],
    ['the OpenAPI document', 'GET', '/v1/openapi.json', { key: null }, 200],
    ['a HEAD', 'HEAD', '/v1/pets', {}, 200],
  ]
  for (const [what, method, path, options, status] of answers) {
    // The OpenAPI document is the same for everyone: a cache may keep it, revalidating (ETag).
    const caching = path === '/v1/openapi.json' ? 'no-cache' : 'no-store'
    it(`sends a fresh X-Request-Id, Cache-Control: ${caching} and nosniff on ${what} (${status})`, async () => {
      const response = await call(server, method, path, options)
      assert.equal(response.status, status)
      assert.match(response.headers.get('x-request-id') ?? '', UUID)
      assert.equal(response.headers.get('cache-control'), caching)
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
    })
  }

  it("echoes a client's well-formed X-Request-Id and replaces a malformed one", async () => {
    const mine = 'client-trace/42:abc'
    assert.equal((await call(server, 'GET', '/v1/pets', { headers: { 'x-request-id': mine } })).headers.get('x-request-id'), mine)
    for (const bad of ['x'.repeat(129), 'has space', 'tab\there']) {
      const response = await call(server, 'GET', '/v1/pets', { headers: { 'x-request-id': bad } })
      assert.match(response.headers.get('x-request-id') ?? '', UUID, bad)
    }
    const line = server.logs.map((text) => JSON.parse(text)).find((entry) => entry.reqId === mine)
    assert.ok(line, 'the log line carries the same id')
  })

  it('leaves the probes and the docs assets their own caching (no no-store outside /v1 on success)', async () => {
    const health = await call(server, 'GET', '/healthz', { key: null })
    assert.equal(health.status, 200)
    assert.match(health.headers.get('x-request-id') ?? '', UUID)
    assert.equal(health.headers.get('cache-control'), null)
  })

  it('answers 431 (headers over 16 KiB) with a new X-Request-Id, no-store and nosniff, on the raw socket', async () => {
    const port = Number(new URL(server.origin).port)
    const head = `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Request-Id: mine\r\nX-Big: ${'a'.repeat(17_000)}\r\n\r\n`
    const { responses } = await rawExchange(port, Buffer.from(head))
    const [answer] = responses
    assert.equal(answer?.status, 431)
    assert.match(answer.headers.get('x-request-id') ?? '', UUID, 'the headers did not parse: a fresh id')
    assert.equal(answer.headers.get('cache-control'), 'no-store')
    assert.equal(answer.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(JSON.parse(answer.text).code, 'headers_too_large')
  })
})

describeEachDatabase('response compression', (database) => {
  let server: TestServer
  const categoryIds = [9223372036854775807n, -9223372036854775808n, 9007199254740993n]
  before(async () => {
    server = await startServer({ database })
    for (let i = 0; i < 100; i++) {
      await server.store.pets.insertPet({ name: `Pet ${i} ünïcödé`, categoryId: categoryIds[i % 3] ?? 0n, status: 'available' })
    }
  })
  after(() => server.close())

  it('sends a page of 100 pets as it is to a client that does not ask for compression', async () => {
    const plain = await get(server, '/v1/pets?limit=100', {})
    assert.equal(plain.status, 200)
    assert.equal(plain.headers['content-encoding'], undefined)
    assert.equal(Number(plain.headers['content-length']), plain.body.length)
    assert.ok(plain.body.length > COMPRESSION_THRESHOLD_BYTES)
  })

  for (const [encoding, inflate] of [
    ['gzip', gunzipSync],
    ['br', brotliDecompressSync],
  ] as const) {
    it(`compresses it with ${encoding} when asked, and it inflates to the same bytes, int64 digits included`, async () => {
      const plain = await get(server, '/v1/pets?limit=100', {})
      const packed = await get(server, '/v1/pets?limit=100', { 'accept-encoding': encoding })
      assert.equal(packed.status, 200)
      assert.equal(packed.headers['content-encoding'], encoding)
      assert.match(String(packed.headers.vary), /accept-encoding/i)
      assert.ok(packed.body.length < plain.body.length / 3, `${packed.body.length} B from ${plain.body.length} B`)
      const inflated = inflate(packed.body)
      assert.ok(inflated.equals(plain.body), 'byte-exact after decompression')
      for (const id of categoryIds) assert.ok(inflated.includes(`"categoryId":${id}`), String(id))
      assert.equal(packed.headers.link, plain.headers.link)
      assert.equal(packed.headers['cache-control'], 'no-store')
    })
  }

  it('prefers the encoding the client ranks higher, and honours identity', async () => {
    assert.equal(
      (await get(server, '/v1/pets?limit=100', { 'accept-encoding': 'gzip;q=1, br;q=0.5' })).headers['content-encoding'],
      'gzip',
    )
    assert.equal(
      (await get(server, '/v1/pets?limit=100', { 'accept-encoding': 'identity' })).headers['content-encoding'],
      undefined,
    )
  })

  it(`leaves a body under ${COMPRESSION_THRESHOLD_BYTES} bytes uncompressed even when asked`, async () => {
    const small = await get(server, '/v1/pets?limit=1', { 'accept-encoding': 'gzip, br' })
    assert.ok(small.body.length < COMPRESSION_THRESHOLD_BYTES)
    assert.equal(small.headers['content-encoding'], undefined)
    const one = await get(server, '/v1/pets/1', { 'accept-encoding': 'gzip, br' })
    assert.equal(one.headers['content-encoding'], undefined)
  })

  it('does not inflate a compressed request body (it would get around the 16 KiB limit): 400', async () => {
    const response = await call(server, 'POST', '/v1/pets', {
      body: '\x1f\x8b',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
    })
    assert.equal(response.status, 400)
  })
})
