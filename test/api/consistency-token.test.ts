// The Consistency-Token header and cursors that carry a position (docs/specification.md, Consistency
// and Pagination) on a deployment without replicas: nothing is sent, a token the service issued is
// taken, one it did not is 400 naming the header, and a cursor with a position pages as one without.
// With replicas: test/store/replica-reads.test.ts and test/ops/replicas.test.ts.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createConsistencyTokens } from '../../src/http/routes/consistency-token.js'
import { createCursorCodec } from '../../src/http/routes/cursor.js'

/** Asserts `response` is a 400 invalid_request whose only failing input is the Consistency-Token header. */
function assertRefusedToken(response: { status: number; json: any }): void {
  assert.equal(response.status, 400)
  assert.equal(response.json.code, 'invalid_request')
  assert.deepEqual(
    response.json.details.map((detail: { in: string; field: string }) => [detail.in, detail.field]),
    [['header', 'consistency-token']],
  )
}

describeEachDatabase('Consistency-Token without replicas', (database) => {
  let server: TestServer
  let key: Buffer
  const ids: string[] = []
  before(async () => {
    server = await startServer({ database })
    key = await server.store.loadCursorKey()
    for (let i = 0; i < 5; i++) {
      const created = await call(server, 'POST', '/v1/pets', { body: { name: `token ${i}`, categoryId: i } })
      ids.push(String(created.json.id))
    }
  })
  after(() => server.close())

  it('sends no Consistency-Token on a 201, first or replayed: every read sees every create', async () => {
    const headers = { 'idempotency-key': 'consistency-none' }
    for (const options of [{}, { headers }, { headers }]) {
      const created = await call(server, 'POST', '/v1/pets', { ...options, body: { name: 'no token', categoryId: 1 } })
      assert.equal(created.status, 201)
      assert.equal(created.headers.get('consistency-token'), null)
    }
  })

  it('serves listPets and getPet with a token it issued (the position is far ahead: no replica to wait for)', async () => {
    const token = createConsistencyTokens(key).encode(0xffff_ffff_ffffn)
    const page = await call(server, 'GET', '/v1/pets?limit=3', { headers: { 'consistency-token': token } })
    assert.equal(page.status, 200)
    assert.equal(page.json.length, 3)
    const pet = await call(server, 'GET', `/v1/pets/${ids[0]}`, { headers: { 'consistency-token': token } })
    assert.equal(pet.status, 200)
    assert.equal(String(pet.json.id), ids[0])
  })

  const good = () => createConsistencyTokens(key).encode(0x16b3748n)
  const refused: Array<[string, () => string]> = [
    ['not of the form', () => 'not-a-token'],
    ['lower-case digits', () => good().toLowerCase()],
    ['an altered position under an issued signature', () => `00000000016B3749${good().slice(16)}`],
    ['an altered signature', () => `${good().slice(0, -1)}${good().endsWith('A') ? 'B' : 'A'}`],
    ['signed with another key (another database)', () => createConsistencyTokens(Buffer.alloc(32, 7)).encode(0x16b3748n)],
    ['a cursor (signed with the same key, never a token)', () => createCursorCodec(key).encode(0x16b3748n)],
  ]
  for (const [what, token] of refused) {
    it(`refuses a token that is ${what} with 400 invalid_request naming the header, on listPets and getPet`, async () => {
      const headers = { 'consistency-token': token() }
      assertRefusedToken(await call(server, 'GET', '/v1/pets', { headers }))
      assertRefusedToken(await call(server, 'GET', `/v1/pets/${ids[0]}`, { headers }))
    })
  }

  it('pages on from a cursor that carries a position, as from one without; refuses one whose position was altered', async () => {
    const cursors = createCursorCodec(key)
    const withPosition = cursors.encode(ids[1] as string, 0x16b3748n)
    const without = cursors.encode(ids[1] as string)
    assert.notEqual(withPosition, without)
    assert.ok(withPosition.length <= 64, 'within the cursor parameter’s 64 characters')
    const positioned = await call(server, 'GET', `/v1/pets?limit=2&cursor=${withPosition}`)
    const plain = await call(server, 'GET', `/v1/pets?limit=2&cursor=${without}`)
    assert.equal(positioned.status, 200)
    assert.deepEqual(positioned.json, plain.json)
    assert.deepEqual(
      positioned.json.map((pet: { id: number }) => String(pet.id)),
      ids.slice(2, 4),
    )
    const [digits, position = '', signature] = withPosition.split('.')
    const altered = `${digits}.${position.slice(0, -1)}${position.endsWith('A') ? 'B' : 'A'}.${signature}`
    const response = await call(server, 'GET', `/v1/pets?cursor=${altered}`)
    assert.equal(response.status, 400)
    assert.deepEqual(
      response.json.details.map((detail: { field: string }) => detail.field),
      ['cursor'],
    )
  })
})
