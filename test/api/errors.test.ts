// Error responses (docs/specification.md, Errors, and the README's decisions where it is silent): every
// failure carries the Error body {code, message, status} as JSON: never HTML, never a stack trace.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../src/http/errors.js'

const JSON_TYPE = { 'content-type': 'application/json' }

describeEachDatabase('error responses', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  describe('unknown routes and methods', () => {
    for (const method of ['GET', 'POST'] as const) {
      it(`${method} /v1/pets/ (an empty petId) returns 404 not_found, as an unknown path`, async () => {
        const response = await call(server, method, '/v1/pets/')
        assert.equal(response.status, 404)
        assert.equal(response.json.code, 'not_found')
      })
    }

    it('GET /v1/pets/ without a key returns 401 first, as any path under /v1', async () => {
      assert.equal((await call(server, 'GET', '/v1/pets/', { key: null })).status, 401)
    })

    for (const path of ['/v1/nothing', '/v1/pets/1/owner', '/v1', '/v2/pets', '/']) {
      it(`GET ${path} returns 404 not_found`, async () => {
        const response = await call(server, 'GET', path)
        assert.equal(response.status, 404)
        assert.equal(response.json.code, 'not_found')
      })
    }

    for (const [method, path, allow] of [
      ['DELETE', '/v1/pets', 'GET, HEAD, POST'],
      ['PUT', '/v1/pets', 'GET, HEAD, POST'],
      ['PATCH', '/v1/pets/1', 'GET, HEAD'],
      ['DELETE', '/v1/pets/1', 'GET, HEAD'],
      ['POST', '/v1/pets/1', 'GET, HEAD'],
      ['OPTIONS', '/v1/pets', 'GET, HEAD, POST'],
    ] as const) {
      it(`${method} ${path} returns 405 method_not_allowed with Allow: ${allow}`, async () => {
        const response = await call(server, method, path)
        assert.equal(response.status, 405)
        assert.equal(response.json.code, 'method_not_allowed')
        assert.equal(response.headers.get('allow'), allow)
      })
    }
  })

  describe('request bodies that are not JSON', () => {
    for (const [label, body] of [
      ['truncated JSON', '{"name":"x",'],
      ['a trailing comma', '{"name":"x","categoryId":1,}'],
      ['single quotes', "{'name':'x'}"],
      ['a bare word', 'pet'],
      ['two documents', '{}{}'],
      ['NaN', '{"name":"x","categoryId":NaN}'],
      ['a duplicate key with another value', '{"name":"x","name":"y","categoryId":1}'],
      ['a comment', '{"name":"x" /* c */,"categoryId":1}'],
    ]) {
      it(`returns 400 invalid_json for ${label}`, async () => {
        const response = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
        assert.equal(response.status, 400)
        assert.equal(response.json.code, 'invalid_json')
      })
    }

    it('returns 400 invalid_json for bytes that are not UTF-8', async () => {
      const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","categoryId":1}')])
      const response = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_json')
    })

    it('returns 400 invalid_request for an empty body', async () => {
      const response = await call(server, 'POST', '/v1/pets', { body: '', headers: JSON_TYPE })
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_request')
      assert.match(response.json.message, /body is required/)
    })

    it('returns 400 (not a crash) for JSON nested 5000 levels deep', async () => {
      const body = `${'['.repeat(5000)}${']'.repeat(5000)}`
      const response = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
      assert.equal(response.status, 400)
      assert.match(response.json.code, /^invalid_(json|request)$/)
    })

    it('accepts an exact duplicate key (same value), as JSON allows', async () => {
      const response = await call(server, 'POST', '/v1/pets', {
        body: '{"name":"x","name":"x","categoryId":1}',
        headers: JSON_TYPE,
      })
      assert.equal(response.status, 201)
    })
  })

  describe('media types', () => {
    for (const contentType of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/xml',
      'multipart/form-data; boundary=x',
    ]) {
      it(`returns 415 unsupported_media_type for Content-Type: ${contentType}`, async () => {
        const response = await call(server, 'POST', '/v1/pets', {
          body: '{"name":"x","categoryId":1}',
          headers: { 'content-type': contentType },
        })
        assert.equal(response.status, 415)
        assert.equal(response.json.code, 'unsupported_media_type')
      })
    }

    it('returns 415 for a JSON body in a charset other than UTF-8', async () => {
      const response = await call(server, 'POST', '/v1/pets', {
        body: '{"name":"x","categoryId":1}',
        headers: { 'content-type': 'application/json; charset=iso-8859-1' },
      })
      assert.equal(response.status, 415)
    })

    it('returns 415 for a body sent without Content-Type', async () => {
      const response = await call(server, 'POST', '/v1/pets', { body: Buffer.from('{"name":"x","categoryId":1}') })
      assert.equal(response.status, 415)
    })

    for (const contentType of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
      it(`accepts Content-Type: ${contentType}`, async () => {
        const response = await call(server, 'POST', '/v1/pets', {
          body: '{"name":"x","categoryId":1}',
          headers: { 'content-type': contentType },
        })
        assert.equal(response.status, 201)
      })
    }

    it('returns 400 invalid_request when POST has no body at all', async () => {
      const response = await call(server, 'POST', '/v1/pets')
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_request')
    })
  })

  describe('body size', () => {
    it('returns 413 body_too_large for a body over 16 KiB', async () => {
      const body = JSON.stringify({ name: 'x'.repeat(16 * 1024), categoryId: 1 })
      const response = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
      assert.equal(response.status, 413)
      assert.equal(response.json.code, 'body_too_large')
    })

    it('returns 413 for a 1 MiB body without reading it into a pet', async () => {
      const response = await call(server, 'POST', '/v1/pets', { body: 'x'.repeat(1024 * 1024), headers: JSON_TYPE })
      assert.equal(response.status, 413)
    })

    it('accepts a body of exactly 16 KiB (then validates it)', async () => {
      const skeleton = JSON.stringify({ name: '', categoryId: 1, pad: '' })
      const body = JSON.stringify({ name: 'x', categoryId: 1, pad: 'p'.repeat(16 * 1024 - skeleton.length - 1) })
      assert.equal(Buffer.byteLength(body), 16 * 1024)
      const response = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
      assert.equal(response.status, 400)
      assert.equal(response.json.details[0].field, 'pad')
    })
  })

  it('returns 500 internal_error with a generic message, logging the cause server-side only', async () => {
    const broken = await startServer({ database })
    try {
      await sql`drop table pets`.execute(broken.store.db)
      const response = await call(broken, 'GET', '/v1/pets')
      assert.equal(response.status, 500)
      assert.equal(response.json.code, 'internal_error')
      assert.doesNotMatch(response.text, /pets|sqlite|table|stack|at |\.ts|\.js/i)
      assert.ok(broken.logs.some((line) => /no such table: pets|relation \\"pets\\" does not exist/.test(line)))
    } finally {
      await broken.close()
    }
  })

  it('returns 503 service_unavailable with Retry-After from /readyz when the database is closed', async () => {
    const closed = await startServer({ database })
    try {
      await closed.store.close()
      const ready = await call(closed, 'GET', '/readyz', { key: null })
      assert.equal(ready.status, 503)
      assert.equal(ready.json.code, 'service_unavailable')
      assert.equal(ready.headers.get('retry-after'), String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS))
    } finally {
      await closed.close()
    }
  })
})
