// The TypeScript client (clients/typescript) against a live server: exact int64 as bigint both ways,
// Link-following iteration, the status filter, the deprecated getPet, and typed errors.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { describeEachDatabase, startServer, type TestServer } from '../../../scripts/lib/test-server.js'
import { createKey } from '../../../src/commands/keys.js'
import { MAX_PAGE_LIMIT } from '../../../src/schemas.js'
import { type AnimalStoreClient, AnimalStoreError, createClient, type Pet } from '../src/index.js'

const INT64_EDGES = [9007199254740993n, 9223372036854775807n, -9223372036854775808n, 0n, -1n]

/** Runs `action`, asserting it throws an AnimalStoreError, which it returns. */
async function rejection(action: () => Promise<unknown>): Promise<AnimalStoreError> {
  try {
    await action()
  } catch (error) {
    assert.ok(error instanceof AnimalStoreError, `expected an AnimalStoreError, got ${error}`)
    return error
  }
  assert.fail('expected the call to throw')
}

describeEachDatabase('TypeScript client', (database) => {
  let server: TestServer
  let client: AnimalStoreClient
  const created: Pet[] = []
  before(async () => {
    server = await startServer({ database })
    client = createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key })
    const statuses = ['available', 'pending', 'sold'] as const
    for (let i = 0; i < 250; i++) {
      created.push(await client.createPet({ name: `pet ${i}`, categoryId: BigInt(i), status: statuses[i % 3] }))
    }
  })
  after(() => server.close())

  it('iterates every pet across pages of 100 (Link rel="next"), ids ascending, none lost or repeated', async () => {
    const seen: Pet[] = []
    for await (const pet of client.pets({ limit: 100 })) seen.push(pet)
    assert.equal(seen.length, 250)
    assert.deepEqual(seen, created)
    for (let i = 1; i < seen.length; i++) assert.ok((seen[i] as Pet).id > (seen[i - 1] as Pet).id, 'ids ascending')
    assert.ok(seen.every((pet) => typeof pet.id === 'bigint' && typeof pet.categoryId === 'bigint'))
  })

  it('listPets returns one page and the next cursor, none after the last page', async () => {
    const first = await client.listPets({ limit: 100 })
    const second = await client.listPets({ limit: 100, cursor: first.nextCursor })
    const third = await client.listPets({ limit: 100, cursor: second.nextCursor })
    assert.deepEqual([first.pets.length, second.pets.length, third.pets.length], [100, 100, 50])
    assert.equal(third.nextCursor, undefined)
  })

  it('keeps the status filter on every page', async () => {
    const sold: Pet[] = []
    for await (const pet of client.pets({ status: 'sold', limit: 7 })) sold.push(pet)
    assert.deepEqual(
      sold,
      created.filter((pet) => pet.status === 'sold'),
    )
  })

  it('sends and reads int64 edge values exactly as bigint, and status defaults to available', async () => {
    for (const categoryId of INT64_EDGES) {
      const pet = await client.createPet({ name: `edge ${categoryId}`, categoryId })
      assert.equal(pet.categoryId, categoryId)
      assert.equal(pet.status, 'available')
      const read = await client.getPet(pet.id)
      assert.deepEqual(read, pet)
    }
    const tail: Pet[] = []
    for await (const pet of client.pets({ limit: 100 })) if (pet.name.startsWith('edge ')) tail.push(pet)
    assert.deepEqual(
      tail.map((pet) => pet.categoryId),
      INT64_EDGES,
    )
  })

  it('getPet (deprecated) still reads one pet', async () => {
    const first = created[0] as Pet
    assert.deepEqual(await client.getPet(first.id), first)
  })

  it('getPet throws AnimalStoreError 404 pet_not_found with the X-Request-Id for an unused int64 id', async () => {
    const error = await rejection(() => client.getPet(9223372036854775807n))
    assert.equal(error.status, 404)
    assert.equal(error.code, 'pet_not_found')
    assert.match(error.requestId ?? '', /\S/)
    assert.ok(
      server.logs.some((line) => line.includes(`"${error.requestId}"`)),
      'the id is the one in the server log',
    )
  })

  it('throws AnimalStoreError 401 invalid_api_key for a wrong key', async () => {
    const stranger = createClient({ baseUrl: `${server.origin}/v1`, apiKey: 'wrong-key-0123456789' })
    const error = await rejection(() => stranger.listPets())
    assert.equal(error.status, 401)
    assert.equal(error.code, 'invalid_api_key')
    assert.match(error.requestId ?? '', /\S/)
  })

  it('with a read-only key lists and reads, and createPet throws AnimalStoreError 403 insufficient_scope at once', async () => {
    const { key } = await createKey(server.store.apiKeys, 'browser page', { scope: 'read', rateLimit: undefined })
    const retries: unknown[] = []
    const page = createClient({ baseUrl: `${server.origin}/v1`, apiKey: key, onRetry: (retry) => void retries.push(retry) })
    const first = created[0] as Pet
    assert.deepEqual(await page.getPet(first.id), first)
    assert.equal((await page.listPets({ limit: 1 })).pets.length, 1)
    const error = await rejection(() => page.createPet({ name: 'from a page', categoryId: 1n }))
    assert.equal(error.status, 403)
    assert.equal(error.code, 'insufficient_scope')
    assert.equal(error.headers.get('www-authenticate'), 'Bearer realm="animal-store", error="insufficient_scope", scope="write"')
    assert.match(error.idempotencyKey ?? '', /\S/)
    assert.deepEqual(retries, [], 'a 403 is not retried')
  })

  it('throws AnimalStoreError 400 invalid_request with details naming each failing field', async () => {
    const error = await rejection(() => client.createPet({ name: '', categoryId: 1n }))
    assert.equal(error.status, 400)
    assert.equal(error.code, 'invalid_request')
    assert.deepEqual([...new Set(error.details?.map((detail) => `${detail.in}.${detail.field}`))], ['body.name'])
    const limit = await rejection(() => client.listPets({ limit: MAX_PAGE_LIMIT + 1 }))
    assert.deepEqual(
      limit.details?.map((detail) => `${detail.in}.${detail.field}`),
      ['query.limit'],
    )
  })
})
