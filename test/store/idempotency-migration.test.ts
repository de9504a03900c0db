// Migration 0005 on a database holding records of the old form (the stored 201: status, Location,
// body): each becomes the created pet's id, a record without a response goes, and a retry with
// the same key afterwards replays the same pet.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { describeEachDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY } from '../../src/config.js'
import { openStore, type Store } from '../../src/store/index.js'
import { databaseBefore } from '../support/schema-before.js'

// The schema as it was before 0005; the later migrations apply after it, as on a real upgrade.
const MIGRATION_0005 = '0005-keep-pet-id-of-idempotency-keys'
const BIG_ID = '9223372036854775807'

describeEachDatabase('migration 0005: idempotency records keep the pet id', (database) => {
  const dir = tempDir()
  let store: Store
  let drop: () => Promise<void>
  before(async () => {
    const { old, config, drop: dropDatabase } = await databaseBefore(database, dir.path, MIGRATION_0005)
    drop = dropDatabase
    await old.insertInto('pets').values({ id: BIG_ID, name: 'Rex', category_id: '1', status: 'available' }).execute()
    const record = { api_key_id: '1', request_hash: 'hash', created_at: Date.now() }
    await old
      .insertInto('idempotency_keys')
      .values([
        {
          ...record,
          idempotency_key: 'done',
          response_status: 201,
          response_location: `/v1/pets/${BIG_ID}`,
          response_body: `{"id":${BIG_ID},"name":"Rex","categoryId":1,"status":"available"}`,
        },
        { ...record, idempotency_key: 'unanswered' },
      ])
      .execute()
    await old.destroy()
    store = await openStore(config)
    const { applied } = await store.migrate()
    assert.equal(applied[0], MIGRATION_0005, `0005 applies first: ${applied.join(', ')}`)
  })
  after(async () => {
    await store.close()
    await drop()
    dir.remove()
  })

  it('converts a stored response into its pet id, exact at 2^63−1, and deletes a record without one', async () => {
    const rows = await store.db.selectFrom('idempotency_keys').selectAll().orderBy('idempotency_key').execute()
    assert.deepEqual(
      rows.map((row) => [row.idempotency_key, String(row.pet_id)]),
      [['done', BIG_ID]],
    )
    const columns = Object.keys(rows[0] ?? {})
    assert.ok(columns.includes('pet_id'), `0005 adds pet_id: ${columns.join(', ')}`)
    for (const dropped of ['response_status', 'response_location', 'response_body'])
      assert.ok(!columns.includes(dropped), `0005 drops ${dropped}: ${columns.join(', ')}`)
  })

  it('counts the records already held when 0007 adds the per-key count', async () => {
    const counts = await store.db.selectFrom('idempotency_key_counts').selectAll().execute()
    assert.deepEqual(
      counts.map((row) => [row.api_key_id, Number(row.records)]),
      [['1', 1]],
    )
  })

  it('replays the converted record: the same key and request answer the same pet, no new one', async () => {
    const outcome = await store.pets.insertPetOnce(
      { name: 'Rex', categoryId: 1n, status: 'available' },
      {
        scope: '1',
        key: 'done',
        fingerprint: 'hash',
        now: Date.now(),
        expiredBefore: 0,
        maxRecords: DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY,
      },
    )
    assert.deepEqual(outcome, { outcome: 'replayed', petId: BIG_ID })
    const page = await store.pets.listPets({ limit: 10 })
    assert.equal(page.lastId, BIG_ID, 'still the one pet 0005 kept')
    assert.match(page.json, new RegExp(`^\\[\\{"id":${BIG_ID},"name":"Rex",[^{}]*\\}\\]$`))
  })
})
