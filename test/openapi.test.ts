// The contract document: openapi.json is what the server serves, never drifts from the schemas,
// passes a mainstream OpenAPI linter, and agrees with the error catalog and the README both ways.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { ERROR_CODES } from '../src/http/errors.js'
import { openapi } from './contract.js'
import { call, startServer, type TestServer } from './helpers.js'
import { renderOpenApi } from './openapi-document.js'

const root = new URL('..', import.meta.url)
const committed = readFileSync(new URL('openapi.json', root), 'utf8')

describe('OpenAPI document', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  it('openapi.json is exactly what the schemas generate (run `npm run openapi` after changing them)', async () => {
    assert.equal(await renderOpenApi(), committed)
  })

  it('is served at GET /v1/openapi.json without a key, equal to the committed file', async () => {
    const response = await call(server, 'GET', '/v1/openapi.json', { key: null })
    assert.equal(response.status, 200)
    assert.deepEqual(response.json, openapi)
  })

  it('names PUBLIC_URL as its server when it is set', async () => {
    const deployed = await startServer({ publicUrl: 'https://staging.example.com/v1' })
    try {
      const response = await call(deployed, 'GET', '/v1/openapi.json', { key: null })
      assert.deepEqual(
        response.json.servers.map((s: { url: string }) => s.url),
        ['https://staging.example.com/v1'],
      )
      assert.deepEqual(Object.keys(response.json.paths), Object.keys(openapi.paths))
    } finally {
      await deployed.close()
    }
  })

  it('says what the relative server /v1 means when PUBLIC_URL is unset', () => {
    assert.deepEqual(
      openapi.servers.map((s: { url: string }) => s.url),
      ['/v1'],
    )
    assert.match(openapi.servers[0].description, /relative/)
    assert.match(openapi.info.description, /resolve it against the URL this document\s+was fetched from/)
  })

  it('describes the 405 with Allow and the 404 for paths that are not operations, once, in its description', () => {
    assert.match(openapi.info.description, /405\s+`method_not_allowed` with `Allow`/)
    assert.match(openapi.info.description, /404 `not_found`/)
  })

  it('documents X-Request-Id and Cache-Control on every response, RateLimit once the key is accepted, Retry-After on 409 and 429', () => {
    for (const [path, item] of Object.entries<Record<string, { responses: Record<string, { headers: object }> }>>(
      openapi.paths,
    )) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const names = Object.keys(response.headers ?? {})
          const where = `${method} ${path} ${status}`
          for (const name of ['X-Request-Id', 'Cache-Control', 'X-Content-Type-Options'])
            assert.ok(names.includes(name), `${where} ${name}`)
          const keyed = !['401', '408', '431'].includes(status)
          assert.equal(names.includes('RateLimit') && names.includes('RateLimit-Policy'), keyed, `${where} RateLimit`)
          assert.equal(names.includes('Retry-After'), status === '429' || status === '409', `${where} Retry-After`)
        }
      }
    }
  })

  it('gives each operation an example, int64 values beyond 2^53 written exactly', () => {
    const examples = (media: { examples?: Record<string, { value: unknown }> }) => Object.values(media.examples ?? {})
    assert.ok(examples(openapi.paths['/pets'].post.requestBody.content['application/json']).length > 0, 'createPet body')
    for (const [path, method, status] of [
      ['/pets', 'get', '200'],
      ['/pets', 'post', '201'],
      ['/pets/{petId}', 'get', '200'],
    ] as const) {
      const media = openapi.paths[path][method].responses[status].content['application/json']
      assert.ok(examples(media).length > 0, `${method} ${path} ${status}`)
    }
    assert.match(committed, /"categoryId": 9223372036854775807,/)
    assert.match(committed, /"id": 9007199254740993,/)
  })

  it('passes the Redocly CLI linter (recommended rules)', async () => {
    const bin = new URL('node_modules/.bin/redocly', root).pathname
    const { stdout, stderr } = await promisify(execFile)(bin, ['lint', 'openapi.json', '--format', 'stylish'], {
      cwd: root.pathname,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    })
    assert.match(stdout + stderr, /Your API description is valid/)
    assert.doesNotMatch(stdout + stderr, /^\s*\d+:\d+\s+(error|warning)\s/m, 'no lint problem')
  })

  it('lists the three operations of the interface under their operationIds, paths relative to /v1', () => {
    assert.equal(openapi.openapi, '3.1.0')
    assert.equal(openapi.info.version, '1.0.0')
    assert.equal(openapi.paths['/pets'].get.operationId, 'listPets')
    assert.equal(openapi.paths['/pets'].post.operationId, 'createPet')
    assert.equal(openapi.paths['/pets/{petId}'].get.operationId, 'getPet')
    assert.deepEqual(Object.keys(openapi.paths).sort(), ['/pets', '/pets/{petId}'])
  })

  it('requires bearer auth on every operation and documents a 401 with the Error body for each', () => {
    assert.deepEqual(openapi.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      description: openapi.components.securitySchemes.bearerAuth.description,
    })
    for (const operation of [openapi.paths['/pets'].get, openapi.paths['/pets'].post, openapi.paths['/pets/{petId}'].get]) {
      assert.deepEqual(operation.security, [{ bearerAuth: [] }])
      assert.equal(operation.responses['401'].content['application/json'].schema.$ref, '#/components/schemas/Error')
    }
  })

  it('marks getPet deprecated and states the sunset date', () => {
    const getPet = openapi.paths['/pets/{petId}'].get
    assert.equal(getPet.deprecated, true)
    assert.match(getPet.description, /5 December 2030/)
    assert.ok(getPet.responses['200'].headers.Sunset)
  })

  it('documents the limits and defaults: limit 1..100 default 20, status default available, 255-character names', () => {
    const limit = openapi.paths['/pets'].get.parameters.find((p: { name: string }) => p.name === 'limit')
    assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 100, 20])
    const newPet = openapi.components.schemas.NewPet
    assert.equal(newPet.properties.status.default, 'available')
    assert.equal(newPet.properties.name.maxLength, 255)
    assert.equal(newPet.additionalProperties, false)
    assert.equal(newPet.properties.categoryId.format, 'int64')
  })

  it('lists exactly the catalog codes in the Error schema, both ways', () => {
    assert.deepEqual([...openapi.components.schemas.Error.properties.code.enum].sort(), Object.keys(ERROR_CODES).sort())
  })

  it('documents each operation status with an Error code of that status', () => {
    for (const [path, item] of Object.entries<Record<string, { responses: Record<string, unknown> }>>(openapi.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const status of Object.keys(operation.responses).filter((s) => Number(s) >= 400)) {
          const codes = Object.values(ERROR_CODES).filter((entry) => entry.status === Number(status))
          assert.ok(codes.length > 0, `${method} ${path} ${status} has no catalog code`)
        }
      }
    }
  })

  it('agrees with the README error catalog, both ways (code and status)', () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8')
    const rows = [...readme.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \|/gm)].map(([, code, status]) => `${code} ${status}`)
    const catalog = Object.entries(ERROR_CODES).map(([code, entry]) => `${code} ${entry.status}`)
    assert.deepEqual(rows.sort(), catalog.sort())
  })
})
