// GET /metrics (Prometheus text): request counts and durations by operation and status, pool gauges
// and process metrics; absent when metrics are off.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from './helpers.js'

describeEachDatabase('GET /metrics', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database, metrics: true })
  })
  after(() => server.close())

  it('counts requests by operation and status, with a duration histogram', async () => {
    await call(server, 'POST', '/v1/pets', { body: { name: 'm', categoryId: 1 } })
    await call(server, 'GET', '/v1/pets')
    await call(server, 'GET', '/v1/pets', { key: null })
    await call(server, 'GET', '/v1/pets/999')
    await call(server, 'GET', '/v1/nowhere')
    const response = await fetch(`${server.origin}/metrics`)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/)
    const text = await response.text()
    for (const line of [
      'http_requests_total{operation="createPet",method="POST",status="201"} 1',
      'http_requests_total{operation="listPets",method="GET",status="200"} 1',
      'http_requests_total{operation="listPets",method="GET",status="401"} 1',
      'http_requests_total{operation="getPet",method="GET",status="404"} 1',
      'http_requests_total{operation="not_found",method="GET",status="404"} 1',
      'http_request_duration_seconds_count{operation="createPet",method="POST",status="201"} 1',
    ]) {
      assert.ok(text.split('\n').includes(line), `missing: ${line}`)
    }
    assert.match(text, /^db_pool_connections \d+$/m)
    assert.match(text, /^db_pool_connections_in_use \d+$/m)
    assert.match(text, /^db_pool_waiting_requests \d+$/m)
    assert.match(text, /^process_resident_memory_bytes \d+/m)
    assert.doesNotMatch(text, new RegExp(server.key))
  })

  it('is not served when metrics are off', async () => {
    const plain = await startServer({ database })
    try {
      const response = await call(plain, 'GET', '/metrics')
      assert.equal(response.status, 404)
    } finally {
      await plain.close()
    }
  })
})
