// Conditional GETs (RFC 9110 §13): strong ETags on getPet, each listPets page and the OpenAPI
// document; If-None-Match answered 304 without a body, only once the key is accepted.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import {
  call,
  describeEachDatabase,
  freshDatabase,
  startServer,
  type TestServer,
  tempDir,
} from '../../scripts/lib/test-server.js'

const STRONG_TAG = /^"[A-Za-z0-9_-]{10,29}(-br|-gzip)?"$/

/** A GET (or `method`) over node:http, which leaves the body as sent (fetch would decode it). */
function rawGet(
  server: TestServer,
  path: string,
  headers: Record<string, string>,
  method = 'GET',
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(`${server.origin}${path}`, { headers, method }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) }),
      )
      response.on('error', reject)
    })
    req.on('error', reject)
    req.end()
  })
}

describeEachDatabase('conditional requests (If-None-Match, ETag)', (database) => {
  let server: TestServer
  let petId: string
  before(async () => {
    server = await startServer({ database })
    petId = String((await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 3 } })).json.id)
  })
  after(() => server.close())

  describe('getPet', () => {
    it('sends a strong ETag on a 200, the same on every read', async () => {
      const first = await call(server, 'GET', `/v1/pets/${petId}`)
      const second = await call(server, 'GET', `/v1/pets/${petId}`)
      assert.match(first.headers.get('etag') ?? '', STRONG_TAG)
      assert.equal(second.headers.get('etag'), first.headers.get('etag'))
    })

    it('answers 304 without a body to its own tag, with the ETag, Cache-Control and deprecation headers', async () => {
      const tag = (await call(server, 'GET', `/v1/pets/${petId}`)).headers.get('etag') as string
      const response = await call(server, 'GET', `/v1/pets/${petId}`, { headers: { 'if-none-match': tag } })
      assert.equal(response.status, 304)
      assert.equal(response.text, '')
      assert.equal(response.headers.get('etag'), tag)
      assert.equal(response.headers.get('cache-control'), 'no-store')
      assert.equal(response.headers.get('deprecation'), '@1795132800')
      assert.ok(response.headers.get('ratelimit'), 'a 304 is counted like any request')
    })

    it('compares weakly: W/ on the tag, a list holding it, and * all answer 304', async () => {
      const tag = (await call(server, 'GET', `/v1/pets/${petId}`)).headers.get('etag') as string
      for (const field of [`W/${tag}`, `"other", ${tag}`, `"a",,  W/"b" ,${tag}`, '*']) {
        const response = await call(server, 'GET', `/v1/pets/${petId}`, { headers: { 'if-none-match': field } })
        assert.equal(response.status, 304, field)
      }
    })

    it('answers 200 with the body to a tag that does not match, or a malformed field', async () => {
      const tag = (await call(server, 'GET', `/v1/pets/${petId}`)).headers.get('etag') as string
      for (const field of ['"other"', tag.slice(1, -1), `${tag.slice(0, -1)}x"`, 'W/', `${tag}garbage`]) {
        const response = await call(server, 'GET', `/v1/pets/${petId}`, { headers: { 'if-none-match': field } })
        assert.equal(response.status, 200, field)
        assert.equal(response.json.name, 'Rex')
      }
    })

    it('answers 404 to If-None-Match: * for a pet that does not exist', async () => {
      const response = await call(server, 'GET', '/v1/pets/999999', { headers: { 'if-none-match': '*' } })
      assert.equal(response.status, 404)
      assert.equal(response.headers.get('etag'), null)
    })

    it('answers 401, never 304, to a wrong or missing key with a matching tag', async () => {
      const tag = (await call(server, 'GET', `/v1/pets/${petId}`)).headers.get('etag') as string
      for (const key of [`ask_${'A'.repeat(43)}`, null]) {
        const response = await call(server, 'GET', `/v1/pets/${petId}`, { key, headers: { 'if-none-match': tag } })
        assert.equal(response.status, 401)
        assert.equal(response.headers.get('etag'), null)
      }
    })
  })

  describe('listPets', () => {
    it('answers 304 to the page tag, and a new tag with 200 once the page changed', async () => {
      const own = await startServer({ database })
      try {
        await call(own, 'POST', '/v1/pets', { body: { name: 'a', categoryId: 1 } })
        const page = await call(own, 'GET', '/v1/pets?limit=2')
        const tag = page.headers.get('etag') as string
        assert.match(tag, STRONG_TAG)
        const same = await call(own, 'GET', '/v1/pets?limit=2', { headers: { 'if-none-match': tag } })
        assert.equal(same.status, 304)
        assert.equal(same.text, '')
        assert.equal(same.headers.get('link'), null)
        await call(own, 'POST', '/v1/pets', { body: { name: 'b', categoryId: 1 } })
        const grown = await call(own, 'GET', '/v1/pets?limit=2', { headers: { 'if-none-match': tag } })
        assert.equal(grown.status, 200)
        assert.equal(grown.json.length, 2)
        assert.notEqual(grown.headers.get('etag'), tag)
        // The rows stay the same but a next page appears: still a new representation (its Link).
        const full = grown.headers.get('etag') as string
        await call(own, 'POST', '/v1/pets', { body: { name: 'c', categoryId: 1 } })
        const linked = await call(own, 'GET', '/v1/pets?limit=2', { headers: { 'if-none-match': full } })
        assert.equal(linked.status, 200)
        assert.equal(linked.text, grown.text)
        assert.ok(linked.headers.get('link'))
        assert.notEqual(linked.headers.get('etag'), full)
      } finally {
        await own.close()
      }
    })

    it('gives a page a new tag when a pet inside its range commits after it was read (an earlier id, last)', async () => {
      const own = await startServer({ database })
      try {
        // Ids as a PostgreSQL sequence hands them out: 15 was taken before 20 but commits after it.
        const insert = (id: number) =>
          own.store.db
            .insertInto('pets')
            .values({ id: String(id), name: `pet ${id}`, category_id: '1', status: 'available' })
            .execute()
        for (const id of [10, 20, 30]) await insert(id)
        const whole = await call(own, 'GET', '/v1/pets?limit=5')
        const head = await call(own, 'GET', '/v1/pets?limit=2')
        await insert(15)
        for (const [path, before, ids] of [
          ['/v1/pets?limit=5', whole, [10, 15, 20, 30]],
          ['/v1/pets?limit=2', head, [10, 15]],
        ] as const) {
          const after = await call(own, 'GET', path, { headers: { 'if-none-match': before.headers.get('etag') as string } })
          assert.equal(after.status, 200, path)
          assert.deepEqual(
            after.json.map((pet: { id: number }) => pet.id),
            ids,
          )
          assert.notEqual(after.headers.get('etag'), before.headers.get('etag'), path)
        }
      } finally {
        await own.close()
      }
    })

    it('tags a page and a pet alike on every instance of one database, and apart on another database', async () => {
      const dir = tempDir()
      const shared = await freshDatabase(database, dir.path)
      const first = await startServer({ database, databaseConfig: shared.config })
      const second = await startServer({ database, databaseConfig: shared.config })
      const elsewhere = await startServer({ database })
      try {
        for (const server of [first, elsewhere]) await call(server, 'POST', '/v1/pets', { body: { name: 'same', categoryId: 1 } })
        for (const path of ['/v1/pets?limit=5', '/v1/pets/1']) {
          const tags = await Promise.all(
            [first, second, elsewhere].map(async (server) => (await call(server, 'GET', path)).headers.get('etag')),
          )
          assert.equal(tags[1], tags[0], `${path}: the other instance`)
          assert.notEqual(tags[2], tags[0], `${path}: another database`)
        }
      } finally {
        await Promise.all([first.close(), second.close(), elsewhere.close()])
        await shared.drop()
        dir.remove()
      }
    })

    it('answers HEAD as GET: the same ETag without a body, and 304 to it (RFC 9110 §13.1.2), for a page and a pet', async () => {
      for (const path of ['/v1/pets?limit=1', `/v1/pets/${petId}`]) {
        const get = await call(server, 'GET', path)
        const tag = get.headers.get('etag') as string
        const head = await call(server, 'HEAD', path)
        assert.equal(head.status, 200, path)
        assert.equal(head.text, '')
        assert.equal(head.headers.get('etag'), tag, `${path}: HEAD and GET give one tag`)
        const same = await call(server, 'HEAD', path, { headers: { 'if-none-match': tag } })
        assert.equal(same.status, 304, path)
        assert.equal(same.headers.get('etag'), tag)
        const other = await call(server, 'HEAD', path, { headers: { 'if-none-match': '"another"' } })
        assert.equal(other.status, 200, path)
      }
    })

    it('tags a compressed page apart from the identity one, and answers 304 to it with Vary', async () => {
      const own = await startServer({ database })
      try {
        for (let i = 0; i < 30; i++) await call(own, 'POST', '/v1/pets', { body: { name: `pet number ${i}`, categoryId: i } })
        const headers = { authorization: `Bearer ${own.key}` }
        const plain = await rawGet(own, '/v1/pets', headers)
        const br = await rawGet(own, '/v1/pets', { ...headers, 'accept-encoding': 'br' })
        assert.equal(br.headers['content-encoding'], 'br')
        assert.equal(br.headers.etag, `${(plain.headers.etag as string).slice(0, -1)}-br"`)
        assert.deepEqual(brotliDecompressSync(br.body), plain.body)
        const again = await rawGet(own, '/v1/pets', {
          ...headers,
          'accept-encoding': 'br',
          'if-none-match': br.headers.etag as string,
        })
        assert.equal(again.status, 304)
        assert.equal(again.body.length, 0)
        assert.equal(again.headers.etag, br.headers.etag)
        assert.equal(again.headers.vary, 'accept-encoding')
        // The identity tag names another representation than the one this request selects.
        const other = await rawGet(own, '/v1/pets', {
          ...headers,
          'accept-encoding': 'br',
          'if-none-match': plain.headers.etag as string,
        })
        assert.equal(other.status, 200)
      } finally {
        await own.close()
      }
    })
  })
})

describe('HEAD carries exactly the header fields of its GET (RFC 9110 §9.3.2), on 200 and on 304, with CORS on', () => {
  const origin = 'https://app.example.com'
  let server: TestServer
  let petId: string
  before(async () => {
    server = await startServer({ corsOrigins: [origin] })
    for (let i = 0; i < 40; i++) {
      petId = String((await call(server, 'POST', '/v1/pets', { body: { name: `pet number ${i}`, categoryId: i } })).json.id)
    }
  })
  after(() => server.close())

  // What differs between any two answers: the date, the request's id, and the rate limit's remaining count.
  const VOLATILE = new Set(['date', 'x-request-id', 'ratelimit'])
  const fields = (headers: Record<string, string | string[] | undefined>) =>
    Object.fromEntries(Object.entries(headers).filter(([name]) => !VOLATILE.has(name)))

  const paths = () => ['/v1/pets?limit=40', `/v1/pets/${petId}`, '/v1/openapi.json']
  const codings = [undefined, 'br', 'gzip', 'identity', 'br;q=0, gzip', '*', 'x-gzip', 'zstd']
  it("answers HEAD with the GET's fields (ETag, Content-Encoding, Content-Length, Vary …) and no body, for each Accept-Encoding", async () => {
    for (const path of paths()) {
      for (const coding of codings) {
        const headers: Record<string, string> = { authorization: `Bearer ${server.key}`, origin }
        if (coding !== undefined) headers['accept-encoding'] = coding
        const get = await rawGet(server, path, headers)
        const head = await rawGet(server, path, headers, 'HEAD')
        const what = `${path} with Accept-Encoding ${coding}`
        assert.equal(get.status, 200, what)
        assert.equal(head.status, 200, what)
        assert.deepEqual(fields(head.headers), fields(get.headers), what)
        assert.equal(head.body.length, 0, what)
        assert.equal(Number(get.headers['content-length']), get.body.length, what)
      }
    }
  })

  it("answers a HEAD and a GET that hold the tag with the same 304, whose Vary is the 200's", async () => {
    for (const path of paths()) {
      for (const coding of codings) {
        const headers: Record<string, string> = { authorization: `Bearer ${server.key}`, origin }
        if (coding !== undefined) headers['accept-encoding'] = coding
        const full = await rawGet(server, path, headers)
        const conditional = { ...headers, 'if-none-match': full.headers.etag as string }
        const get = await rawGet(server, path, conditional)
        const head = await rawGet(server, path, conditional, 'HEAD')
        const what = `${path} with Accept-Encoding ${coding}`
        assert.equal(get.status, 304, what)
        assert.equal(head.status, 304, what)
        assert.deepEqual(fields(head.headers), fields(get.headers), what)
        assert.equal(get.headers.vary, full.headers.vary, what)
        assert.equal(get.headers['content-length'], undefined, `${what}: a 304 has no Content-Length`)
      }
    }
  })
})

describe('GET /v1/openapi.json (conditional, compressed once)', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  it('is revalidated (no-cache) with a strong ETag, and 304 without a key to its tag', async () => {
    const first = await call(server, 'GET', '/v1/openapi.json', { key: null })
    assert.equal(first.headers.get('cache-control'), 'no-cache')
    const tag = first.headers.get('etag') as string
    assert.match(tag, STRONG_TAG)
    const again = await call(server, 'GET', '/v1/openapi.json', {
      key: null,
      headers: { 'if-none-match': tag },
    })
    assert.equal(again.status, 304)
    assert.equal(again.text, '')
    assert.equal(again.headers.get('cache-control'), 'no-cache')
    assert.equal(again.headers.get('vary'), 'accept-encoding')
  })

  it('serves the same bytes for each coding on every request, each decoding to the document', async () => {
    const identity = await rawGet(server, '/v1/openapi.json', {})
    assert.equal(identity.headers['content-encoding'], undefined)
    assert.equal(JSON.parse(identity.body.toString()).info.title, 'Animal Store')
    for (const [coding, decode] of [
      ['br', brotliDecompressSync],
      ['gzip', gunzipSync],
    ] as const) {
      const first = await rawGet(server, '/v1/openapi.json', { 'accept-encoding': coding })
      const second = await rawGet(server, '/v1/openapi.json', { 'accept-encoding': coding })
      assert.equal(first.headers['content-encoding'], coding)
      assert.equal(first.headers.etag, `${(identity.headers.etag as string).slice(0, -1)}-${coding}"`)
      assert.deepEqual(second.body, first.body)
      assert.deepEqual(decode(first.body), identity.body)
      assert.ok(first.body.length < identity.body.length / 5, `${coding}: ${first.body.length} bytes`)
    }
  })
})
