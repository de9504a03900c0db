// The pets an instance keeps for getPet (src/http/routes/pet-cache.ts), over a real SQLite store: a
// row deleted behind the store's back shows what is read and what is served from memory.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { tempDir } from '../../scripts/lib/test-server.js'
import { cachingFindPet } from '../../src/http/routes/pet-cache.js'
import { openStore, type Store } from '../../src/store/index.js'

describe('the pets kept for getPet', () => {
  const dir = tempDir()
  let store: Store
  const draft = (name: string) => ({ name, categoryId: 7n, status: 'available' as const })
  // Deletes the pet's row directly: the contract never does, so only a read shows it is gone.
  const deleteRow = (id: string) => store.db.deleteFrom('pets').where('id', '=', BigInt(id)).execute()

  before(async () => {
    store = await openStore({ dialect: 'sqlite', path: join(dir.path, 'pets.db') })
    await store.migrate()
  })
  after(async () => {
    await store.close()
    dir.remove()
  })

  it('serves a pet it read without reading it again, while servable', async () => {
    const pet = await store.pets.insertPet(draft('kept'))
    let servable = true
    const findPet = cachingFindPet(store.pets.findPet, () => servable)
    assert.equal(await findPet(pet.id), pet.body)
    await deleteRow(pet.id)
    assert.equal(await findPet(BigInt(pet.id)), pet.body, 'kept under its id, whether text or bigint')
    servable = false
    assert.equal(await findPet(pet.id), undefined, 'not servable: read from the store, where it is gone')
    servable = true
    assert.equal(await findPet(pet.id), undefined, 'a read that found no pet dropped the kept one')
  })

  it('keeps no pet it did not find: one created under that id later is found', async () => {
    const findPet = cachingFindPet(store.pets.findPet, () => true)
    const id = 9_007_199_254_740_993n
    assert.equal(await findPet(id), undefined)
    await store.db.insertInto('pets').values({ id, name: 'created later', category_id: 7n, status: 'sold' }).execute()
    const found = await findPet(id)
    assert.ok(found !== undefined, 'read from the store, where it is now')
    assert.equal(JSON.parse(found).name, 'created later')
  })

  it('starts over past its bound in characters of JSON', async () => {
    const pets = [await store.pets.insertPet(draft('one')), await store.pets.insertPet(draft('two'))]
    const [first, second] = pets as [(typeof pets)[0], (typeof pets)[0]]
    // Room for the first pet alone: reading the second makes it start over with the second only.
    const findPet = cachingFindPet(store.pets.findPet, () => true, first.body.length + second.body.length - 1)
    assert.equal(await findPet(first.id), first.body)
    assert.equal(await findPet(second.id), second.body)
    await deleteRow(first.id)
    await deleteRow(second.id)
    assert.equal(await findPet(first.id), undefined, 'the first was dropped when the second came')
    assert.equal(await findPet(second.id), second.body, 'the second is kept')
  })
})
