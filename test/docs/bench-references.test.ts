// The bench's reference apps (bench/references/) against the service on the same database: they must do the service's
// work for the bench's requests (the same JSON, exact int64, the key check), or the ratios of docs/benchmarks.md
// compare unlike things; the typical apps must also carry what makes them typical (a request id, getPet's deprecation
// headers, a rate limit on every request, metrics, validation). Cheap: no load, no wrk.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { join } from 'node:path'
import { after, before, it } from 'node:test'
import type { BenchDatabase } from '../../bench/databases.js'
import { type ServerProcess, startServer as startChild } from '../../bench/processes.js'
import type { Process } from '../../bench/scenarios.js'
import { programOf, transpileReferences } from '../../bench/servers.js'
import { describeEachDatabase, freshDatabase, startServer, type TestServer, tempDir } from '../../scripts/lib/test-server.js'
import { PET_MEMBERS } from '../../src/store/pet-columns.js'

const INT64_MAX = '9223372036854775807'
const INT64_MIN = '-9223372036854775808'
const NAMES = ['plain', 'a "quoted" \\ name', 'tab\tnew\nline\u0001', 'line\u2028para\u2029', 'emoji 🐈‍⬛']
/** The apps that serve the bench's requests from the database, as the service does. */
const APPS = ['minimal-fastify', 'typical-fastify', 'typical-express'] as const
const TYPICAL = ['typical-fastify', 'typical-express'] as const

/** GET or POST `path` on `origin`; resolves to status, the headers and the body as text. */
async function send(origin: string, path: string, authorization?: string, body?: string, headers: Record<string, string> = {}) {
  const response = await fetch(origin + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      ...headers,
      ...(authorization && { authorization }),
      ...(body !== undefined && { 'content-type': 'application/json' }),
    },
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

describeEachDatabase('bench reference apps', (database) => {
  const dir = tempDir()
  let service: TestServer
  let authorization: string
  let drop: () => Promise<void>
  let bench: BenchDatabase
  let undo: () => void
  const references = new Map<string, ServerProcess>()
  const origin = (name: string) => references.get(name)?.origin ?? ''
  /** Starts reference `process` on `on` as the bench does, accepting `authorization`. */
  const startReference = (process: Process, on: BenchDatabase) => {
    const program = programOf(process, on, { node: globalThis.process.execPath, references: dir.path })
    const env = { ...program.env, BENCH_AUTHORIZATION: authorization }
    return startChild(process, program.argv, env, join(dir.path, `${process}-${Math.random()}.out`))
  }

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
    undo = transpileReferences(dir.path)
    const location = database === 'sqlite' ? join(dir.path, 'test.db') : fresh.url
    bench = { kind: database, url: fresh.url, location, destroy: async () => {} }
    for (const process of ['bare', ...APPS] as const) references.set(process, await startReference(process, bench))
  })

  after(async () => {
    for (const each of references.values()) await each.stop()
    undo?.()
    await service?.close()
    await drop?.()
    dir.remove()
  })

  it('lists the same JSON as the service, page by page, with a Link to the next', async () => {
    const ours = await send(service.origin, '/v1/pets?limit=2', authorization)
    const ourNext = /<([^>]+)>; rel="next"/.exec(ours.headers.get('link') ?? '')?.[1]
    assert.ok(ourNext, 'the service links to a next page')
    for (const app of APPS) {
      const theirs = await send(origin(app), '/v1/pets?limit=2', authorization)
      assert.equal(theirs.status, 200, app)
      assert.equal(theirs.body, ours.body, app)
      const next = /<([^>]+)>; rel="next"/.exec(theirs.headers.get('link') ?? '')?.[1]
      assert.ok(next, `${app} links to a next page`)
      assert.equal(
        (await send(origin(app), next, authorization)).body,
        (await send(service.origin, ourNext, authorization)).body,
        app,
      )
    }
  })

  it('reads each pet as the same JSON, int64 edges and hard names included', async () => {
    for (const app of APPS) {
      for (let id = 1; id <= NAMES.length; id++) {
        const theirs = await send(origin(app), `/v1/pets/${id}`, authorization)
        assert.equal(theirs.status, 200, app)
        assert.equal(theirs.body, (await send(service.origin, `/v1/pets/${id}`, authorization)).body, app)
      }
      const edge = (await send(origin(app), '/v1/pets/1', authorization)).body
      assert.match(edge, new RegExp(`"categoryId":${INT64_MAX}[,}]`), app)
      assert.equal((await send(origin(app), '/v1/pets/999999', authorization)).status, 404, app)
    }
  })

  it('creates a pet, keeping every digit of categoryId', async () => {
    for (const app of APPS) {
      const created = await send(origin(app), '/v1/pets', authorization, `{"name":"x","categoryId":${INT64_MAX}}`)
      assert.equal(created.status, 201, app)
      const id = /"id":(\d+)/.exec(created.body)?.[1]
      assert.equal(created.headers.get('location'), `/v1/pets/${id}`, app)
      assert.equal(created.body, (await send(service.origin, `/v1/pets/${id}`, authorization)).body, app)
    }
  })

  it('refuses a missing or wrong key with the service’s 401, keeping the connection as it does (bare and minimal)', async () => {
    const ours = await send(service.origin, '/v1/pets')
    for (const name of ['bare', 'minimal-fastify']) {
      const missing = await send(origin(name), '/v1/pets')
      assert.equal(missing.status, 401, name)
      assert.equal(missing.body, ours.body, name)
      assert.equal(missing.headers.get('www-authenticate'), ours.headers.get('www-authenticate'), name)
      assert.equal(await connectionHeader(origin(name)), await connectionHeader(service.origin), name)
      assert.equal((await send(origin(name), '/v1/pets', 'Bearer wrong')).status, 401, name)
    }
  })

  it('refuses a missing or wrong key with a 401 and a Bearer challenge, keeping the connection (typical)', async () => {
    for (const app of TYPICAL) {
      for (const key of [undefined, 'Bearer wrong', 'Basic d3Jvbmc=']) {
        const refused = await send(origin(app), '/v1/pets', key)
        assert.equal(refused.status, 401, `${app} ${key}`)
        assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="animal-store"', app)
      }
      assert.equal(await connectionHeader(origin(app)), await connectionHeader(service.origin), app)
    }
  })

  it('echoes the X-Request-Id sent, or a generated one (typical)', async () => {
    for (const app of TYPICAL) {
      const given = await send(origin(app), '/v1/pets/1', authorization, undefined, { 'x-request-id': 'trace-42' })
      assert.equal(given.headers.get('x-request-id'), 'trace-42', app)
      const generated = await send(origin(app), '/v1/pets/1', authorization)
      assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, app)
    }
  })

  it('sends getPet’s Deprecation, Sunset and successor Link as the service does (typical)', async () => {
    const ours = await send(service.origin, '/v1/pets/1', authorization)
    for (const app of TYPICAL) {
      const theirs = await send(origin(app), '/v1/pets/1', authorization)
      for (const header of ['deprecation', 'sunset', 'link']) assert.equal(theirs.headers.get(header), ours.headers.get(header))
    }
  })

  it('counts every request against a rate limit and serves its request metrics (typical)', async () => {
    const limited = {
      'typical-fastify': (headers: Headers) => assert.equal(headers.get('x-ratelimit-limit'), '10000000'),
      'typical-express': (headers: Headers) => assert.match(headers.get('ratelimit-policy') ?? '', /q=10000000/),
    }
    for (const app of TYPICAL) {
      limited[app]((await send(origin(app), '/v1/pets', authorization)).headers)
      limited[app]((await send(origin(app), '/v1/pets')).headers)
      const metrics = await send(origin(app), '/metrics')
      assert.equal(metrics.status, 200, app)
      assert.match(metrics.body, /^http_request_duration_seconds_bucket\{.*\/v1\/pets/m, app)
    }
  })

  it('refuses an invalid query, path or body with a 400 (typical)', async () => {
    for (const app of TYPICAL) {
      for (const path of ['/v1/pets?limit=0', '/v1/pets?limit=101', '/v1/pets?status=lost', '/v1/pets/abc'])
        assert.equal((await send(origin(app), path, authorization)).status, 400, `${app} ${path}`)
      for (const body of ['{"categoryId":7}', '{"name":"x","categoryId":9223372036854775808}', '{"name":"x"', '[]'])
        assert.equal((await send(origin(app), '/v1/pets', authorization, body)).status, 400, `${app} ${body}`)
    }
  })

  it('answers the bare floor’s list and create with bodies of the service’s shape', async () => {
    const page = JSON.parse((await send(origin('bare'), '/v1/pets?limit=3&status=sold', authorization)).body)
    assert.deepEqual(Object.keys(page[0]), PET_MEMBERS)
    assert.equal(page.length, 3)
    const created = await send(origin('bare'), '/v1/pets', authorization, '{"name":"b","categoryId":7,"status":"available"}')
    assert.equal(created.status, 201)
    assert.deepEqual(Object.keys(JSON.parse(created.body)), PET_MEMBERS)
  })

  it('fails to start, with the driver’s error, on a database it cannot open', async () => {
    const missing = database === 'sqlite' ? join(dir.path, 'missing.db') : 'postgres://bench:none@127.0.0.1:1/missing'
    for (const app of APPS) {
      await assert.rejects(startReference(app, { ...bench, location: missing }), (error: Error) => {
        assert.match(error.message, new RegExp(`^${app} did not start: exited`))
        assert.match(error.message, database === 'sqlite' ? /unable to open database file/ : /ECONNREFUSED/)
        return true
      })
    }
  })
})
