// GET /metrics (Prometheus text) on its own listener: request counts and durations by operation and
// status, pool gauges and process metrics; never on the public port.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { loadConfig } from '../src/config.js'
import { assertBuilt, cliEnv, killLeftovers, startServe } from './cli-process.js'
import { call, describeEachDatabase, startServer, type TestServer, tempDir } from './helpers.js'

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
    const response = await fetch(`${server.metricsOrigin}/metrics`)
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

  it('is not served on the public port: 401 without a key, 404 with one', async () => {
    assert.equal((await call(server, 'GET', '/metrics', { key: null })).status, 401)
    assert.equal((await call(server, 'GET', '/metrics')).status, 404)
  })

  it('answers only GET and HEAD /metrics on the metrics listener', async () => {
    assert.equal((await fetch(`${server.metricsOrigin}/v1/pets`)).status, 404)
    const post = await fetch(`${server.metricsOrigin}/metrics`, { method: 'POST' })
    assert.equal(post.status, 405)
    assert.equal(post.headers.get('allow'), 'GET, HEAD')
    const head = await fetch(`${server.metricsOrigin}/metrics`, { method: 'HEAD' })
    assert.equal(head.status, 200)
  })
})

describe('the metrics listener of `serve` (METRICS_HOST, METRICS_PORT)', () => {
  const dir = tempDir()
  before(assertBuilt)
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('listens on 127.0.0.1:9464 by default, apart from PORT, which it may not share', () => {
    const config = loadConfig({}, '/w')
    assert.equal(config.metricsHost, '127.0.0.1')
    assert.equal(config.metricsPort, 9464)
    assert.throws(
      () => loadConfig({ PORT: '9000', METRICS_PORT: '9000' }, '/w'),
      /^ConfigError: METRICS_PORT must differ from PORT/,
    )
  })

  it('serve prints where the metrics are and serves them there, not on its public port', async () => {
    const server = await startServe(cliEnv({ DATABASE_URL: `sqlite:${dir.path}/a.db`, LOG_LEVEL: 'warn' }))
    try {
      assert.ok(server.metricsOrigin, server.stdout())
      assert.notEqual(server.metricsOrigin, server.origin)
      assert.match(await (await fetch(`${server.metricsOrigin}/metrics`)).text(), /^# TYPE http_requests_total counter$/m)
      assert.equal((await fetch(`${server.origin}/metrics`)).status, 401)
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server.kill()
    }
  })

  it('serve starts no metrics listener when METRICS_ENABLED=false', async () => {
    const server = await startServe(cliEnv({ DATABASE_URL: `sqlite:${dir.path}/b.db`, METRICS_ENABLED: 'false' }))
    try {
      assert.equal(server.metricsOrigin, undefined)
      assert.doesNotMatch(server.stdout(), /metrics/i)
    } finally {
      await server.stop('SIGTERM')
    }
  })
})
