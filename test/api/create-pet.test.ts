// POST /v1/pets (createPet): docs/specification.md (createPet, NewPet, Pet), and the README decisions
// (default status, name rule, unknown fields, int64 exactness, Location).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { PET_MEMBERS } from '../../src/store/pet-columns.js'

describeEachDatabase('POST /v1/pets (createPet)', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  const create = (body: unknown, headers?: Record<string, string>) => call(server, 'POST', '/v1/pets', { body, headers })

  it('returns 201 with the Pet, its assigned id and a Location header', async () => {
    const response = await create({ name: 'Rex', categoryId: 7, status: 'pending' })
    assert.equal(response.status, 201)
    assert.deepEqual(Object.keys(response.json), PET_MEMBERS, 'every Pet member, in the schema order')
    assert.equal(response.json.name, 'Rex')
    assert.equal(response.json.categoryId, 7)
    assert.equal(response.json.status, 'pending')
    assert.equal(typeof response.json.id, 'number')
    assert.equal(response.headers.get('location'), `/v1/pets/${response.json.id}`)
    const read = await call(server, 'GET', `/v1/pets/${response.json.id}`)
    assert.deepEqual(read.json, response.json)
  })

  it('defaults status to available when it is omitted', async () => {
    const response = await create({ name: 'Tom', categoryId: 1 })
    assert.equal(response.status, 201)
    assert.equal(response.json.status, 'available')
  })

  it('accepts every PetStatus value', async () => {
    for (const status of ['available', 'pending', 'sold']) {
      const response = await create({ name: `status ${status}`, categoryId: 1, status })
      assert.equal(response.status, 201)
      assert.equal(response.json.status, status)
    }
  })

  it('stores the name exactly as sent: spaces, unicode, astral characters, escapes, 255 code points', async () => {
    const names = [
      '  padded  ',
      'Ünïcødé 名前',
      '🐕‍🦺 dog',
      'x'.repeat(255),
      '𝒳'.repeat(255),
      'a\tb\nc',
      'say "hi" \\ \u0001\u001f\u2028',
    ]
    for (const name of names) {
      const response = await create({ name, categoryId: 1 })
      assert.equal(response.status, 201, name)
      assert.equal(response.json.name, name)
      const read = await call(server, 'GET', `/v1/pets/${response.json.id}`)
      assert.equal(read.json.name, name)
      // The 201 and the read render the same pet to the same bytes.
      assert.equal(read.text, response.text, name)
    }
  })

  it('assigns increasing ids', async () => {
    const first = await create({ name: 'a', categoryId: 1 })
    const second = await create({ name: 'b', categoryId: 1 })
    assert.ok(BigInt(second.exact.id) > BigInt(first.exact.id))
  })

  describe('int64 categoryId', () => {
    const edges = [
      0n,
      -1n,
      2n ** 53n - 1n,
      2n ** 53n,
      2n ** 53n + 1n,
      -(2n ** 53n) - 1n,
      2n ** 63n - 1n,
      -(2n ** 63n),
      1234567890123456789n,
    ]
    for (const value of edges) {
      it(`keeps ${value} exact in the 201 body, the Location read and the list`, async () => {
        const response = await create({ name: 'int64', categoryId: value })
        assert.equal(response.status, 201)
        assert.equal(BigInt(response.exact.categoryId), value)
        assert.match(response.text, new RegExp(`"categoryId":${value}[,}]`))
        const read = await call(server, 'GET', response.headers.get('location') ?? '')
        assert.match(read.text, new RegExp(`"categoryId":${value}[,}]`))
      })
    }

    it('returns 2^53+1 as 9007199254740993, not …992', async () => {
      const response = await create('{"name":"big","categoryId":9007199254740993}', { 'content-type': 'application/json' })
      assert.equal(response.status, 201)
      assert.match(response.text, /"categoryId":9007199254740993\b/)
    })

    it('accepts integral numbers written with a fraction or exponent, exactly', async () => {
      for (const [literal, expected] of [
        ['1.0', '1'],
        ['1e3', '1000'],
        ['9.223372036854775807e18', '9223372036854775807'],
        ['-9223372036854775808.000', '-9223372036854775808'],
        ['-0', '0'],
      ]) {
        const response = await create(`{"name":"exp","categoryId":${literal}}`, { 'content-type': 'application/json' })
        assert.equal(response.status, 201, literal)
        assert.match(response.text, new RegExp(`"categoryId":${expected}[,}]`), literal)
      }
    })

    for (const literal of ['9223372036854775808', '-9223372036854775809', '18446744073709551616', '1e19', '1e400', '-1e400']) {
      it(`rejects ${literal} (outside int64) with 400 invalid_request`, async () => {
        const response = await create(`{"name":"x","categoryId":${literal}}`, { 'content-type': 'application/json' })
        assert.equal(response.status, 400)
        assert.equal(response.json.code, 'invalid_request')
        assert.deepEqual(
          response.json.details.map((d: { field: string }) => d.field),
          ['categoryId'],
        )
      })
    }

    for (const literal of ['1.5', '9007199254740993.5', '1.00000000000000001', '"7"', 'true', 'null', '[1]', '{}']) {
      it(`rejects categoryId ${literal} (not an integer) with 400`, async () => {
        const response = await create(`{"name":"x","categoryId":${literal}}`, { 'content-type': 'application/json' })
        assert.equal(response.status, 400)
        assert.equal(response.json.code, 'invalid_request')
        assert.equal(response.json.details[0].field, 'categoryId')
      })
    }
  })

  describe('invalid bodies', () => {
    const cases: Array<[string, unknown, string[]]> = [
      ['name is missing', { categoryId: 1 }, ['name']],
      ['categoryId is missing', { name: 'x' }, ['categoryId']],
      ['both required fields are missing', {}, ['name', 'categoryId']],
      ['name is empty', { name: '', categoryId: 1 }, ['name']],
      ['name is only whitespace', { name: ' \t\n ', categoryId: 1 }, ['name']],
      ['name has 256 characters', { name: 'x'.repeat(256), categoryId: 1 }, ['name']],
      ['name contains NUL', { name: 'a\u0000b', categoryId: 1 }, ['name']],
      ['name has an unpaired surrogate', { name: 'a\ud800b', categoryId: 1 }, ['name']],
      ['name is a number', { name: 5, categoryId: 1 }, ['name']],
      ['name is null', { name: null, categoryId: 1 }, ['name']],
      ['status is not a PetStatus', { name: 'x', categoryId: 1, status: 'lost' }, ['status']],
      ['status has the wrong case', { name: 'x', categoryId: 1, status: 'Available' }, ['status']],
      ['status is null', { name: 'x', categoryId: 1, status: null }, ['status']],
      ['an unknown field is sent', { name: 'x', categoryId: 1, colour: 'red' }, ['colour']],
      ['id is sent (the service assigns it)', { id: 5, name: 'x', categoryId: 1 }, ['id']],
      ['every field is wrong', { name: 1, categoryId: 'a', status: 2, extra: true }, ['extra', 'name', 'categoryId', 'status']],
    ]
    for (const [when, body, fields] of cases) {
      it(`returns 400 invalid_request listing every failing field when ${when}`, async () => {
        const response = await create(body)
        assert.equal(response.status, 400)
        assert.equal(response.json.code, 'invalid_request')
        const failing = [...new Set(response.json.details.map((d: { field: string }) => d.field))]
        assert.deepEqual(failing.sort(), [...fields].sort())
        for (const detail of response.json.details) assert.equal(detail.in, 'body')
      })
    }

    for (const body of ['[]', '"pet"', '42', 'null', 'true']) {
      it(`returns 400 invalid_request when the body is JSON ${body}, not an object`, async () => {
        const response = await create(body, { 'content-type': 'application/json' })
        assert.equal(response.status, 400)
        assert.equal(response.json.code, 'invalid_request')
      })
    }

    it('rejects a __proto__ key as an unknown field, and pollutes nothing', async () => {
      const response = await create('{"name":"x","categoryId":1,"__proto__":{"status":"sold","admin":true}}', {
        'content-type': 'application/json',
      })
      assert.equal(response.status, 400)
      assert.deepEqual(response.json.details, [{ in: 'body', field: '__proto__', message: 'is not a known field' }])
      assert.equal(({} as Record<string, unknown>).admin, undefined)
    })

    it('does not take required fields from a __proto__ object', async () => {
      const response = await create('{"__proto__":{"name":"x","categoryId":1}}', { 'content-type': 'application/json' })
      assert.equal(response.status, 400)
      const fields = response.json.details.map((d: { field: string }) => d.field).sort()
      assert.deepEqual(fields, ['__proto__', 'categoryId', 'name'])
    })

    it('rejects a constructor.prototype key as an unknown field', async () => {
      const response = await create('{"name":"x","categoryId":1,"constructor":{"prototype":{"a":1}}}', {
        'content-type': 'application/json',
      })
      assert.equal(response.status, 400)
      assert.equal(response.json.details[0].field, 'constructor')
    })
  })

  it('handles 200 concurrent creates with 201 each and 200 distinct ids, all readable', async () => {
    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => create({ name: `concurrent ${i}`, categoryId: BigInt(i) + 2n ** 60n })),
    )
    assert.deepEqual(new Set(responses.map((r) => r.status)), new Set([201]))
    const ids = new Set(responses.map((r) => String(r.exact.id)))
    assert.equal(ids.size, 200)
    for (const [i, response] of responses.entries()) {
      assert.equal(response.json.name, `concurrent ${i}`)
      assert.equal(BigInt(response.exact.categoryId), BigInt(i) + 2n ** 60n)
    }
  })
})
