// The client's conditional reads against a live server: If-None-Match sent, a 304 surfaced as
// `notModified` with the ETag, a changed page read afresh, and a wrong key still an error.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { describeEachDatabase, startServer, type TestServer } from '../../../scripts/lib/test-server.js'
import { type AnimalStoreClient, AnimalStoreError, createClient, type Pet } from '../src/index.js'

describeEachDatabase('TypeScript client: conditional reads', (database) => {
  let server: TestServer
  let client: AnimalStoreClient
  let pet: Pet
  before(async () => {
    server = await startServer({ database })
    client = createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key })
    pet = await client.createPet({ name: 'Rex', categoryId: 9223372036854775807n })
  })
  after(() => server.close())

  it('reads a page with its etag, then gets notModified for it, then the new page once it changed', async () => {
    const first = await client.listPetsIfChanged({ limit: 5 })
    assert.ok(!first.notModified)
    assert.deepEqual(first.data.pets, [pet])
    assert.match(first.etag ?? '', /^"[\w-]+"$/)
    const again = await client.listPetsIfChanged({ limit: 5 }, { ifNoneMatch: first.etag })
    assert.deepEqual(again, { notModified: true, etag: first.etag })
    const second = await client.createPet({ name: 'Tom', categoryId: 1n })
    const changed = await client.listPetsIfChanged({ limit: 5 }, { ifNoneMatch: first.etag })
    assert.ok(!changed.notModified)
    assert.deepEqual(changed.data.pets, [pet, second])
    assert.notEqual(changed.etag, first.etag)
  })

  it('gets notModified for a pet it holds, the 304 in withResponse()', async () => {
    const { etag } = await client.getPetIfChanged(pet.id)
    const { data, response } = await client.getPetIfChanged(pet.id, { ifNoneMatch: etag }).withResponse()
    assert.equal(response.status, 304)
    assert.deepEqual(data, { notModified: true, etag })
  })

  it('throws 401 invalid_api_key, not notModified, for a wrong key with a matching tag', async () => {
    const { etag } = await client.getPetIfChanged(pet.id)
    const stranger = createClient({ baseUrl: `${server.origin}/v1`, apiKey: `ask_${'B'.repeat(43)}`, retries: 0 })
    await assert.rejects(stranger.getPetIfChanged(pet.id, { ifNoneMatch: etag }), (error) => {
      assert.ok(error instanceof AnimalStoreError)
      assert.equal(error.status, 401)
      return true
    })
  })
})
