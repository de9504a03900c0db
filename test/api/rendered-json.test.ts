// The Pet and Pets bodies as the store renders them (SQLite: store/pet-sql.ts; PostgreSQL's rows:
// store/pet-json.ts), checked through both databases
// at the edge values: exact int64 digits at ±(2^63−1) and −2^63, names with quotes, backslashes,
// control characters, U+2028/U+2029 and emoji; byte for byte what Fastify's schema serializer
// writes for the same pets, and valid against the Pet and Pets schemas.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { Ajv } from 'ajv'
import Fastify from 'fastify'
import { parse as parseLossless } from 'lossless-json'
import { describeEachDatabase, freshDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { INT64_MAX, INT64_MIN, parseJsonNumber, validateWithBigInts } from '../../src/int64.js'
import { PET_STATUSES, Pet, PetStatus, Pets } from '../../src/schemas.js'
import { openStore, type Store } from '../../src/store/index.js'
import { PET_COLUMNS, PET_MEMBERS } from '../../src/store/pet-columns.js'

const NAMES = [
  'plain',
  'say "hi"',
  'back\\slash \\" \\\\',
  // every control character JSON must escape (NUL excepted: names never hold it), and DEL
  `${Array.from({ length: 31 }, (_, i) => String.fromCharCode(i + 1)).join('')}\u007f`,
  'line\u2028separator\u2029paragraph',
  'emoji 🐕‍🦺 🐈‍⬛ and ünïcödé',
  ' leading and trailing spaces ',
  '</script><!--',
]
const EDGE_IDS = [-INT64_MAX, -(2n ** 53n) - 1n, 0n, 1n, 2n ** 53n + 1n, INT64_MAX - 1n, INT64_MAX]
const EDGE_CATEGORIES = [INT64_MIN, -INT64_MAX, -1n, 0n, 2n ** 53n, INT64_MAX]

interface Expected {
  id: bigint
  name: string
  categoryId: bigint
  status: (typeof PET_STATUSES)[number]
}
const ROWS: Expected[] = EDGE_IDS.map((id, i) => ({
  id,
  name: NAMES[i % NAMES.length] as string,
  categoryId: EDGE_CATEGORIES[i % EDGE_CATEGORIES.length] as bigint,
  status: PET_STATUSES[i % PET_STATUSES.length] as Expected['status'],
}))
// the names not used above, on pets of their own
for (const [i, name] of NAMES.slice(EDGE_IDS.length).entries()) {
  ROWS.push({ id: 1000n + BigInt(i), name, categoryId: INT64_MIN, status: 'sold' })
}
ROWS.sort((a, b) => (a.id < b.id ? -1 : 1))
const stringOrNull = (value: unknown) => (value === undefined || value === null ? null : String(value))

// What the schema serializer (fast-json-stringify, through Fastify's response schemas) writes.
async function schemaSerializer(): Promise<{ pet(row: Expected): Promise<string>; pets(rows: Expected[]): Promise<string> }> {
  const app = Fastify()
  for (const schema of [PetStatus, Pet, Pets]) app.addSchema(schema)
  let payload: unknown
  app.get('/pet', { schema: { response: { 200: { $ref: 'Pet' } } } }, async () => payload)
  app.get('/pets', { schema: { response: { 200: { $ref: 'Pets' } } } }, async () => payload)
  await app.ready()
  const render = async (url: string, value: unknown) => {
    payload = value
    return (await app.inject({ url })).body
  }
  return { pet: (row) => render('/pet', row), pets: (rows) => render('/pets', rows) }
}

const ajv = new Ajv({ strict: false, formats: { int64: true } })
for (const schema of [PetStatus, Pet, Pets]) ajv.addSchema(schema)
const validatePet = ajv.getSchema('Pet')
const validatePets = ajv.getSchema('Pets')

function assertValid(validate: typeof validatePet, body: string): unknown {
  assert.ok(validate)
  const value = parseLossless(body, undefined, parseJsonNumber)
  assert.ok(validateWithBigInts(validate, value), `${body}: ${JSON.stringify(validate.errors)}`)
  return value
}

it('maps every member of the Pet schema to a column, in the schema order', () => {
  assert.deepEqual(PET_MEMBERS, Object.keys(Pet.properties))
  for (const member of PET_MEMBERS) assert.ok(PET_COLUMNS[member], `Pet member ${member} has no column`)
})

describeEachDatabase('Pet and Pets bodies as the store renders them', (database) => {
  const dir = tempDir()
  let store: Store
  let drop: () => Promise<void>
  let serialize: Awaited<ReturnType<typeof schemaSerializer>>
  before(async () => {
    const fresh = await freshDatabase(database, dir.path)
    drop = fresh.drop
    store = await openStore(fresh.config)
    await store.migrate()
    await store.db
      .insertInto('pets')
      .values(
        // Every member into its column (PET_COLUMNS), int64 as text: no column named here.
        ROWS.map((row) =>
          Object.fromEntries(PET_MEMBERS.map((member) => [PET_COLUMNS[member], stringOrNull(row[member])])),
        ) as never,
      )
      .execute()
    serialize = await schemaSerializer()
  })
  after(async () => {
    await store.close()
    await drop()
    dir.remove()
  })

  it('has a pets column behind every Pet member', async () => {
    const tables = await store.db.introspection.getTables()
    const columns = tables.find((table) => table.name === 'pets')?.columns.map((column) => column.name) ?? []
    for (const member of PET_MEMBERS) assert.ok(columns.includes(PET_COLUMNS[member]), `no column for ${member}`)
  })

  it('renders each pet as the schema serializer does, int64 exact, and valid against Pet', async () => {
    for (const row of ROWS) {
      const body = await store.pets.findPet(row.id)
      assert.equal(body, await serialize.pet(row), `pet ${row.id}`)
      const value = assertValid(validatePet, body as string) as Record<string, unknown>
      assert.deepEqual(Object.keys(value), PET_MEMBERS)
      assert.equal(BigInt(value.id as number | bigint), row.id)
      assert.equal(BigInt(value.categoryId as number | bigint), row.categoryId)
      assert.equal(value.name, row.name)
    }
  })

  it('answers nothing for an id no pet has', async () => {
    assert.equal(await store.pets.findPet(INT64_MIN), undefined)
    assert.equal(await store.pets.findPet(2n), undefined)
  })

  it('renders a page as the schema serializer does, valid against Pets, with its last id and whether more follow', async () => {
    const page = await store.pets.listPets({ limit: 100 })
    assert.equal(page.json, await serialize.pets(ROWS))
    assert.equal(page.ids, ROWS.map((row) => row.id).join(','))
    assertValid(validatePets, page.json)
    assert.equal(page.more, false)
    assert.equal(page.lastId, INT64_MAX.toString())
  })

  it('pages through the edge ids by keyset, the last page saying no more follow', async () => {
    const seen: Expected[] = []
    let afterId: bigint | undefined
    for (;;) {
      const page = await store.pets.listPets({ limit: 3, afterId })
      const rows = ROWS.filter((row) => afterId === undefined || row.id > afterId).slice(0, 3)
      assert.equal(page.json, await serialize.pets(rows))
      seen.push(...rows)
      if (!page.more) break
      assert.equal(page.lastId, rows.at(-1)?.id.toString())
      afterId = BigInt(page.lastId as string)
    }
    assert.deepEqual(seen, ROWS)
  })

  it('says no more follow a page that ends exactly at the last pet, and more when one pet is left out', async () => {
    const whole = await store.pets.listPets({ limit: ROWS.length })
    assert.equal(whole.json, await serialize.pets(ROWS))
    assert.equal(whole.more, false)
    const short = await store.pets.listPets({ limit: ROWS.length - 1 })
    assert.equal(short.json, await serialize.pets(ROWS.slice(0, -1)))
    assert.equal(
      short.ids,
      ROWS.slice(0, -1)
        .map((row) => row.id)
        .join(','),
    )
    assert.equal(short.more, true)
    assert.equal(short.lastId, ROWS.at(-2)?.id.toString())
  })

  it('renders an empty page as [] with no last id', async () => {
    const { position, ...page } = await store.pets.listPets({ limit: 5, afterId: INT64_MAX })
    assert.deepEqual(page, { json: '[]', ids: '', lastId: undefined, more: false })
    assert.equal(position, undefined, 'no replicas: no position')
  })

  it('filters a page by status and says whether more of that status follow', async () => {
    const sold = ROWS.filter((row) => row.status === 'sold')
    const first = await store.pets.listPets({ limit: 1, status: 'sold' })
    assert.equal(first.json, await serialize.pets(sold.slice(0, 1)))
    assert.equal(first.more, sold.length > 1)
    const all = await store.pets.listPets({ limit: 100, status: 'sold' })
    assert.equal(all.json, await serialize.pets(sold))
    assert.equal(all.more, false)
  })
})
