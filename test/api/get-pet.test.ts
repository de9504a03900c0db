// GET /v1/pets/{petId} (getPet, deprecated): 200/404/400, int64 petId, and the RFC 9745 / RFC 8594 /
// RFC 8288 deprecation headers on every response of the operation.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'

function assertDeprecationHeaders(headers: Headers): void {
  assert.equal(headers.get('deprecation'), '@1795132800')
  assert.equal(headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT')
  assert.equal(headers.get('link'), '</v1/pets>; rel="successor-version"')
}

describeEachDatabase('GET /v1/pets/{petId} (getPet)', (database) => {
  let server: TestServer
  let pet: { id: number; name: string; categoryId: number; status: string }
  before(async () => {
    server = await startServer({ database })
    pet = (await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 3, status: 'sold' } })).json
  })
  after(() => server.close())

  it('returns 200 with the Pet', async () => {
    const response = await call(server, 'GET', `/v1/pets/${pet.id}`)
    assert.equal(response.status, 200)
    assert.deepEqual(response.json, pet)
  })

  it('carries Deprecation, Sunset and the successor-version Link on a 200', async () => {
    assertDeprecationHeaders((await call(server, 'GET', `/v1/pets/${pet.id}`)).headers)
  })

  for (const id of ['999999', '0', '-1', '9223372036854775807', '-9223372036854775808', '9007199254740993']) {
    it(`returns 404 pet_not_found for the unused id ${id}, with the deprecation headers`, async () => {
      const response = await call(server, 'GET', `/v1/pets/${id}`)
      assert.equal(response.status, 404)
      assert.equal(response.json.code, 'pet_not_found')
      assertDeprecationHeaders(response.headers)
    })
  }

  it('does not confuse 2^53+1 with 2^53 (exact int64 lookup)', async () => {
    const big = await startServer({ database })
    try {
      await big.store.db
        .insertInto('pets')
        .values({ id: 2n ** 53n + 1n, name: 'big', category_id: 1n, status: 'available' })
        .execute()
      const hit = await call(big, 'GET', '/v1/pets/9007199254740993')
      assert.equal(hit.status, 200)
      assert.match(hit.text, /"id":9007199254740993\b/)
      const miss = await call(big, 'GET', '/v1/pets/9007199254740992')
      assert.equal(miss.status, 404)
    } finally {
      await big.close()
    }
  })

  for (const id of [
    'abc',
    '-0',
    '1.5',
    '1e3',
    '+1',
    '01',
    '%20%31',
    '9223372036854775808',
    '-9223372036854775809',
    '99999999999999999999',
  ]) {
    it(`returns 400 invalid_request naming petId for ${id}, with the deprecation headers`, async () => {
      const response = await call(server, 'GET', `/v1/pets/${id}`)
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_request')
      assert.deepEqual(
        response.json.details.map((d: { in: string; field: string }) => `${d.in}.${d.field}`),
        ['path.petId'],
      )
      assertDeprecationHeaders(response.headers)
    })
  }

  it('carries the deprecation headers on a 401 too', async () => {
    const response = await call(server, 'GET', `/v1/pets/${pet.id}`, { key: null })
    assert.equal(response.status, 401)
    assertDeprecationHeaders(response.headers)
  })

  it('answers HEAD like GET, without a body', async () => {
    const response = await call(server, 'HEAD', `/v1/pets/${pet.id}`)
    assert.equal(response.status, 200)
    assert.equal(response.text, '')
  })
})
