// The contract document: openapi.json is what the server serves, never drifts from the schemas,
// passes a mainstream OpenAPI linter, and agrees with the error catalog and the README both ways.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { openapi } from '../../scripts/lib/contract.js'
import { renderOpenApi } from '../../scripts/lib/openapi-document.js'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { ERROR_CODES } from '../../src/http/errors.js'
import { openApiServers } from '../../src/http/routes/openapi.js'
import { NAME_PATTERN } from '../../src/schemas.js'

const root = new URL('../..', import.meta.url)
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

  it('is served at GET /v1/openapi.json without a key, equal to the committed file but for HOST:PORT', async () => {
    const response = await call(server, 'GET', '/v1/openapi.json', { key: null })
    assert.equal(response.status, 200)
    // The test server is built without HOST and PORT (it listens on port 0): only the relative server.
    assert.deepEqual(response.json, { ...openapi, servers: openapi.servers.slice(1) })
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

  it('lists http://HOST:PORT/v1 first (usable by Node clients as is), then the relative /v1, when PUBLIC_URL is unset', () => {
    assert.deepEqual(
      openapi.servers.map((s: { url: string }) => s.url),
      ['http://127.0.0.1:8080/v1', '/v1'],
    )
    assert.match(openapi.servers[1].description, /relative/)
    assert.match(openapi.info.description, /resolve\s+against the URL this document was fetched from/)
  })

  it('names the address a client can dial: 127.0.0.1 or [::1] for a wildcard HOST, none for PORT 0', () => {
    const urls = (host: string, port: number) => openApiServers({ host, port }).map((server) => server.url)
    assert.deepEqual(urls('0.0.0.0', 8080), ['http://127.0.0.1:8080/v1', '/v1'])
    assert.deepEqual(urls('::', 9000), ['http://[::1]:9000/v1', '/v1'])
    assert.deepEqual(urls('10.0.0.5', 80), ['http://10.0.0.5:80/v1', '/v1'])
    assert.deepEqual(urls('127.0.0.1', 0), ['/v1'])
    assert.deepEqual(
      openApiServers({ publicUrl: 'https://api.example.com/v1', host: '0.0.0.0', port: 8080 }).map((server) => server.url),
      ['https://api.example.com/v1'],
    )
  })

  it('describes the 405 with Allow and the 404 for paths that are not operations, once, in its description', () => {
    assert.match(openapi.info.description, /405\s+`method_not_allowed` with `Allow`/)
    assert.match(openapi.info.description, /404 `not_found`/)
  })

  it('documents X-Request-Id and Cache-Control on every response, RateLimit on every one read (401 too), Retry-After on 409, 429 and 503', () => {
    for (const [path, item] of Object.entries<Record<string, { responses: Record<string, { headers: object }> }>>(
      openapi.paths,
    )) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          const names = Object.keys(response.headers ?? {})
          const where = `${method} ${path} ${status}`
          for (const name of ['X-Request-Id', 'Cache-Control', 'X-Content-Type-Options'])
            assert.ok(names.includes(name), `${where} ${name}`)
          const read = !['408', '431'].includes(status)
          assert.equal(names.includes('RateLimit') && names.includes('RateLimit-Policy'), read, `${where} RateLimit`)
          assert.equal(names.includes('Retry-After'), ['409', '429', '503'].includes(status), `${where} Retry-After`)
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

  it('requires bearer auth on every operation, names the scope each needs, and documents a 401 with the Error body for each', () => {
    assert.deepEqual(openapi.components.securitySchemes.bearerAuth, {
      type: 'http',
      scheme: 'bearer',
      description: openapi.components.securitySchemes.bearerAuth.description,
    })
    assert.match(
      openapi.components.securitySchemes.bearerAuth.description,
      /`read` \(listPets, getPet\) or `write` \(also createPet/,
    )
    const scopes: Array<[any, string]> = [
      [openapi.paths['/pets'].get, 'read'],
      [openapi.paths['/pets'].post, 'write'],
      [openapi.paths['/pets/{petId}'].get, 'read'],
    ]
    for (const [operation, scope] of scopes) {
      assert.deepEqual(operation.security, [{ bearerAuth: [scope] }], operation.operationId)
      assert.equal(operation.responses['401'].content['application/json'].schema.$ref, '#/components/schemas/Error')
    }
  })

  it('documents the 403 insufficient_scope of createPet with its RFC 6750 challenge, and no 403 where any key will do', () => {
    const forbidden = openapi.paths['/pets'].post.responses['403']
    assert.equal(forbidden.content['application/json'].schema.$ref, '#/components/schemas/Error')
    assert.match(forbidden.description, /insufficient_scope/)
    assert.match(forbidden.headers['WWW-Authenticate'].description, /error="insufficient_scope", scope="write"/)
    assert.equal(openapi.paths['/pets'].get.responses['403'], undefined)
    assert.equal(openapi.paths['/pets/{petId}'].get.responses['403'], undefined)
  })

  it('gives every error response one example per code of its status, with that code and status (not an invented one)', () => {
    for (const [path, item] of Object.entries<
      Record<string, { responses: Record<string, { content?: Record<string, { examples?: object }> }> }>
    >(openapi.paths)) {
      for (const [method, operation] of Object.entries(item)) {
        for (const [status, response] of Object.entries(operation.responses)) {
          if (Number(status) < 400) continue
          const examples = Object.values(response.content?.['application/json']?.examples ?? {}) as {
            value: Record<string, unknown>
          }[]
          const codes = Object.entries(ERROR_CODES).filter(([, entry]) => entry.status === Number(status))
          assert.deepEqual(
            examples.map(({ value }) => [value.code, value.status, value.message]),
            codes.map(([code, entry]) => [code, entry.status, entry.message]),
            `${method} ${path} ${status}`,
          )
          for (const { value } of examples) assert.equal('details' in value, value.code === 'invalid_request')
        }
      }
    }
  })

  it('states the name rule as one pattern that means the same with and without the RegExp `u` flag', () => {
    assert.equal(openapi.components.schemas.NewPet.properties.name.pattern, NAME_PATTERN)
    const names = {
      'Rex 🐶': true,
      Zoë: true,
      猫: true,
      'bad\uFFFD': true,
      'lone\uD800': false,
      'x\uDC00y': false,
      'a\u0000b': false,
      '  ': false,
    }
    for (const [name, valid] of Object.entries(names)) {
      assert.equal(new RegExp(NAME_PATTERN, 'u').test(name), valid, `u: ${JSON.stringify(name)}`)
      assert.equal(new RegExp(NAME_PATTERN).test(name), valid, `no u: ${JSON.stringify(name)}`)
    }
    // Generators that decode \uXXXX escapes into the characters themselves lose no part of the rule.
    assert.doesNotMatch(NAME_PATTERN, /\\u[dD][89a-fA-F]/)
  })

  it('marks getPet deprecated and states the sunset date', () => {
    const getPet = openapi.paths['/pets/{petId}'].get
    assert.equal(getPet.deprecated, true)
    assert.match(getPet.description, /5 December 2030/)
    assert.ok(getPet.responses['200'].headers.Sunset)
  })

  it('documents the limits and defaults: limit 1..100 default 20, status `available` when omitted (in words), 255-character names', () => {
    const limit = openapi.paths['/pets'].get.parameters.find((p: { name: string }) => p.name === 'limit')
    assert.deepEqual([limit.schema.minimum, limit.schema.maximum, limit.schema.default], [1, 100, 20])
    const newPet = openapi.components.schemas.NewPet
    // No `default` keyword: openapi-typescript would make the property required (clients/typescript/test/client-generated.test.ts).
    assert.equal(newPet.properties.status.default, undefined)
    assert.match(newPet.properties.status.description, /`available` when omitted/)
    assert.ok(!newPet.required.includes('status'))
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
