// PostgreSQL going away under a running server: operations and /readyz answer 503
// service_unavailable with Retry-After (never 500, never a crash), and both recover by themselves when it returns.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { call, ownPostgresWithServer, TEST_DATABASES } from '../../scripts/lib/test-server.js'
import { SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS } from '../../src/http/errors.js'

describe('PostgreSQL outage, restart and recovery', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  const own = ownPostgresWithServer()

  it('answers 503 while the database is down and recovers without a restart', async () => {
    const created = await call(own.server, 'POST', '/v1/pets', { body: { name: 'before', categoryId: 1 } })
    assert.equal(created.status, 201)
    // Read once, so that the instance keeps it (pet-cache.ts): a kept pet answers 503 too while the database is down.
    assert.equal((await call(own.server, 'GET', `/v1/pets/${created.json.id}`)).status, 200)

    await own.postgres.stop()
    for (const [method, path, body] of [
      ['GET', '/v1/pets', undefined],
      ['POST', '/v1/pets', { name: 'during', categoryId: 2 }],
      ['GET', `/v1/pets/${created.json.id}`, undefined],
    ] as const) {
      const response = await call(own.server, method, path, { body })
      assert.equal(response.status, 503, `${method} ${path}`)
      assert.equal(response.json.code, 'service_unavailable')
      assert.equal(response.headers.get('retry-after'), String(SERVICE_UNAVAILABLE_RETRY_AFTER_SECONDS), `${method} ${path}`)
    }
    const ready = await call(own.server, 'GET', '/readyz', { key: null })
    assert.equal(ready.status, 503)
    assert.equal((await call(own.server, 'GET', '/healthz', { key: null })).status, 200, 'the process itself is alive')

    await own.postgres.start()
    const deadline = Date.now() + 10_000
    let status = 503
    while (status !== 200 && Date.now() < deadline) status = (await call(own.server, 'GET', '/readyz', { key: null })).status
    assert.equal(status, 200, '/readyz recovers')
    const list = await call(own.server, 'GET', '/v1/pets')
    assert.equal(list.status, 200)
    assert.deepEqual(
      list.json.map((pet: { name: string }) => pet.name),
      ['before'],
    )
    assert.equal((await call(own.server, 'POST', '/v1/pets', { body: { name: 'after', categoryId: 3 } })).status, 201)
    assert.deepEqual((await call(own.server, 'GET', `/v1/pets/${created.json.id}`)).json, created.json)
    assert.ok(
      own.server.logs.every((line) => !/"level":60/.test(line)),
      'nothing fatal was logged',
    )
  })

  it('answers only 200, 201 or 503 through a restart, and keeps every acknowledged pet', async (t) => {
    const statuses = new Map<number, number>()
    const acknowledged: Array<{ id: number; name: string }> = []
    let running = true
    const client = async (worker: number) => {
      for (let i = 0; running; i++) {
        const response =
          i % 3 === 0
            ? await call(own.server, 'GET', '/v1/pets?limit=5')
            : await call(own.server, 'POST', '/v1/pets', { body: { name: `load ${worker}-${i}`, categoryId: i } })
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1)
        if (response.status === 201) acknowledged.push(response.json)
      }
    }
    const clients = Array.from({ length: 8 }, (_, worker) => client(worker))
    const waitFor = async (condition: () => boolean, what: string) => {
      const deadline = Date.now() + 15_000
      while (!condition() && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
      assert.ok(condition(), what)
    }
    await waitFor(() => acknowledged.length >= 50, 'load is flowing')
    await own.postgres.stop()
    await waitFor(() => (statuses.get(503) ?? 0) >= 20, 'the outage is answered with 503')
    await own.postgres.start()
    const before = acknowledged.length
    await waitFor(() => acknowledged.length >= before + 50, 'creates succeed again after the restart')
    running = false
    await Promise.all(clients)

    t.diagnostic(`statuses through the restart: ${JSON.stringify(Object.fromEntries(statuses))}`)
    assert.deepEqual(
      [...statuses.keys()].filter((status) => ![200, 201, 503].includes(status)),
      [],
    )
    const stored = await own.server.store.db.selectFrom('pets').select(['id', 'name']).execute()
    const byId = new Map(stored.map((row) => [String(row.id), row.name]))
    const lost = acknowledged.filter((pet) => byId.get(String(pet.id)) !== pet.name)
    assert.deepEqual(lost, [], 'every acknowledged pet is stored')
  })
})
