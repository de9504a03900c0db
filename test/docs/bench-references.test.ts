// The bench's reference servers (bench/references.ts) against the service on the same database: they must do the
// service's work for the bench's requests (the same JSON, exact int64, the key check, a 401 that closes), or the
// ratios of docs/benchmarks.md compare unlike things. Cheap: no load, no wrk.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { join } from 'node:path'
import { after, before, it } from 'node:test'
import { type ServerProcess, startServer as startChild } from '../../bench/processes.js'
import { transpileReferences } from '../../bench/run.js'
import { describeEachDatabase, freshDatabase, startServer, type TestServer, tempDir } from '../../scripts/lib/test-server.js'
import { PET_MEMBERS } from '../../src/store/pet-columns.js'

const INT64_MAX = '9223372036854775807'
const INT64_MIN = '-9223372036854775808'
const NAMES = ['plain', 'a "quoted" \\ name', 'tab\tnew\nline\u0001', 'line\u2028para\u2029', 'emoji 🐈‍⬛']

/** GET or POST `path` on `origin`; resolves to status, the headers and the body as text. */
async function send(origin: string, path: string, authorization?: string, body?: string) {
  const response = await fetch(origin + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { ...(authorization && { authorization }), ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body }),
  })
  return { status: response.status, headers: response.headers, body: await response.text() }
}

/** The raw `Connection` header of a GET without a key (fetch hides it). */
function connectionHeader(origin: string): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    request(`${origin}/v1/pets`, (response) => {
      response.resume()
      resolve(response.headers.connection)
    })
      .on('error', reject)
      .end()
  })
}

describeEachDatabase('bench reference servers', (database) => {
  const dir = tempDir()
  let service: TestServer
  let authorization: string
  let drop: () => Promise<void>
  const references = new Map<string, ServerProcess>()
  const origin = (name: string) => references.get(name)?.origin ?? ''

  before(async () => {
    const fresh = await freshDatabase(database, dir.path)
    drop = fresh.drop
    service = await startServer({ databaseConfig: fresh.config })
    authorization = `Bearer ${service.key}`
    for (const [index, name] of NAMES.entries()) {
      const categoryId = [INT64_MAX, INT64_MIN, '7'][index % 3]
      const created = await send(
        service.origin,
        '/v1/pets',
        authorization,
        `{"name":${JSON.stringify(name)},"categoryId":${categoryId}}`,
      )
      assert.equal(created.status, 201)
    }
    const undo = transpileReferences(dir.path)
    try {
      const location = database === 'sqlite' ? join(dir.path, 'test.db') : fresh.url
      const env = { BENCH_AUTHORIZATION: authorization, BENCH_DATABASE: location, PATH: process.env.PATH }
      for (const mode of ['bare', database]) {
        const argv = [process.execPath, join(dir.path, 'references.js'), mode]
        references.set(mode, await startChild(mode, argv, env, join(dir.path, `${mode}.out`)))
      }
    } finally {
      undo()
    }
  })

  after(async () => {
    for (const each of references.values()) await each.stop()
    await service?.close()
    await drop?.()
    dir.remove()
  })

  it('lists the same JSON as the service, page by page, with a Link to the next', async () => {
    const ours = await send(service.origin, '/v1/pets?limit=2', authorization)
    const theirs = await send(origin(database), '/v1/pets?limit=2', authorization)
    assert.equal(theirs.status, 200)
    assert.equal(theirs.body, ours.body)
    const next = /<([^>]+)>; rel="next"/.exec(theirs.headers.get('link') ?? '')?.[1]
    const ourNext = /<([^>]+)>; rel="next"/.exec(ours.headers.get('link') ?? '')?.[1]
    assert.ok(next && ourNext, 'both link to a next page')
    assert.equal(
      (await send(origin(database), next, authorization)).body,
      (await send(service.origin, ourNext, authorization)).body,
    )
  })

  it('reads each pet as the same JSON, int64 edges and hard names included', async () => {
    for (let id = 1; id <= NAMES.length; id++) {
      const theirs = await send(origin(database), `/v1/pets/${id}`, authorization)
      assert.equal(theirs.status, 200)
      assert.equal(theirs.body, (await send(service.origin, `/v1/pets/${id}`, authorization)).body)
    }
    assert.match((await send(origin(database), '/v1/pets/1', authorization)).body, new RegExp(`"categoryId":${INT64_MAX}[,}]`))
  })

  it('creates a pet, keeping every digit of categoryId', async () => {
    const created = await send(origin(database), '/v1/pets', authorization, `{"name":"x","categoryId":${INT64_MAX}}`)
    assert.equal(created.status, 201)
    const id = /"id":(\d+)/.exec(created.body)?.[1]
    assert.equal(created.headers.get('location'), `/v1/pets/${id}`)
    assert.equal(created.body, (await send(service.origin, `/v1/pets/${id}`, authorization)).body)
  })

  it('refuses a missing or wrong key with the service’s 401 and closes the connection', async () => {
    const ours = await send(service.origin, '/v1/pets')
    for (const name of ['bare', database]) {
      const missing = await send(origin(name), '/v1/pets')
      assert.equal(missing.status, 401, name)
      assert.equal(missing.body, ours.body, name)
      assert.equal(missing.headers.get('www-authenticate'), ours.headers.get('www-authenticate'), name)
      assert.equal(await connectionHeader(origin(name)), 'close', name)
      assert.equal((await send(origin(name), '/v1/pets', 'Bearer wrong')).status, 401, name)
    }
    assert.equal(await connectionHeader(service.origin), 'close')
  })

  it('answers the bare floor’s list and create with bodies of the service’s shape', async () => {
    const page = JSON.parse((await send(origin('bare'), '/v1/pets?limit=3&status=sold', authorization)).body)
    assert.deepEqual(Object.keys(page[0]), PET_MEMBERS)
    assert.equal(page.length, 3)
    const created = await send(origin('bare'), '/v1/pets', authorization, '{"name":"b","categoryId":7,"status":"available"}')
    assert.equal(created.status, 201)
    assert.deepEqual(Object.keys(JSON.parse(created.body)), PET_MEMBERS)
  })
})
