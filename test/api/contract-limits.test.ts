// The limits openapi.json states (OWASP's API Security ruleset asks for them) are the ones the service
// keeps: the Error body's bounds on what it repeats of the input, the int64 range written exactly, a
// page's maxItems. Header values are checked against their documented limits on every call
// (scripts/lib/contract.ts).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { ERROR_BODY_LIMITS } from '../../src/http/errors.js'
import { MAX_PAGE_LIMIT } from '../../src/schemas.js'

const documentText = readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')
const document = JSON.parse(documentText)

describeEachDatabase('limits stated in openapi.json', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  it('cuts an unknown field name repeated in details to the documented length, in code points', async () => {
    const name = '🐈'.repeat(ERROR_BODY_LIMITS.field + 50)
    const response = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1, [name]: 1 } })
    assert.equal(response.status, 400)
    const field = response.json.details[0].field as string
    assert.equal(Array.from(field).length, ERROR_BODY_LIMITS.field)
    assert.ok(name.startsWith(field))
  })

  it('lists at most the documented number of details, the first ones', async () => {
    const body: Record<string, unknown> = { name: 'Rex', categoryId: 1 }
    for (let i = 0; i < ERROR_BODY_LIMITS.details + 10; i++) body[`extra${i}`] = i
    const response = await call(server, 'POST', '/v1/pets', { body })
    assert.equal(response.status, 400)
    assert.equal(response.json.details.length, ERROR_BODY_LIMITS.details)
    assert.equal(response.json.details[0].field, 'extra0')
  })

  it('states the bounds the Error schema and Pets carry from the same constants', () => {
    const { Error: error, ErrorDetail: detail, Pets: pets } = document.components.schemas
    assert.equal(error.properties.details.maxItems, ERROR_BODY_LIMITS.details)
    assert.equal(error.properties.message.maxLength, ERROR_BODY_LIMITS.message)
    assert.equal(detail.properties.field.maxLength, ERROR_BODY_LIMITS.field)
    assert.equal(pets.maxItems, MAX_PAGE_LIMIT)
  })

  it('writes the int64 range exactly on every int64 schema (no rounding to 2^63)', () => {
    const int64Schemas = documentText.match(/"format": "int64"/g)?.length ?? 0
    assert.ok(int64Schemas >= 4)
    assert.equal(documentText.match(/"minimum": -9223372036854775808,/g)?.length, int64Schemas)
    assert.equal(documentText.match(/"maximum": 9223372036854775807\b/g)?.length, int64Schemas)
  })
})
