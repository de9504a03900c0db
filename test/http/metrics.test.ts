// GET /metrics (Prometheus text) on its own listener: request counts and durations by operation and
// status, pool gauges and process metrics; never on the public port.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { call, describeEachDatabase, startServer, type TestServer, tempDir } from '../../scripts/lib/test-server.js'
import { SHUTDOWN_GRACE_MS } from '../../src/commands/serve.js'
import { DEFAULT_STATEMENT_TIMEOUT_MS, loadConfig } from '../../src/config.js'
import { SERVER_TIMEOUTS } from '../../src/http/connection/timeouts.js'
import { REQUEST_DURATION_BUCKETS } from '../../src/http/observability/metrics.js'
import { assertBuilt, cliEnv, killLeftovers, REPO_ROOT, startServe, within } from '../support/cli-process.js'

/** The value of the sample `name{labels}` (exactly as exposed) in a Prometheus text exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((each) => each.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

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

  it('says which build runs, and exposes pool, writer, connection and key-reload figures', async () => {
    await call(server, 'POST', '/v1/pets', { body: { name: 'n', categoryId: 2 } })
    const text = await (await fetch(`${server.metricsOrigin}/metrics`)).text()
    const build = /^animal_store_build_info\{version="([^"]+)",commit="([^"]+)",node="([^"]+)",database="([^"]+)"\} 1$/m.exec(
      text,
    )
    assert.ok(build, 'animal_store_build_info is 1 with version, commit, node and database labels')
    // Run from the sources (no build): the commit is not known.
    assert.deepEqual(build.slice(1), ['1.0.0', 'unknown', process.versions.node, database])
    for (const gauge of [
      'db_pool_connections_idle',
      'animal_store_sqlite_writer_queue_depth',
      'animal_store_sqlite_writer_failures_total',
      'animal_store_key_reload_failures_total',
      'animal_store_log_stdout_failures_total',
      'http_server_connections',
    ]) {
      assert.ok((sample(text, gauge) ?? -1) >= 0, `missing: ${gauge}`)
    }
    assert.equal(sample(text, 'http_server_max_connections'), 10_000)
    assert.ok((sample(text, 'http_server_connections') ?? 0) >= 1, 'the connection of the create is open (keep-alive)')
    const commits = sample(text, 'animal_store_sqlite_commit_duration_seconds_count') ?? 0
    if (database === 'sqlite') assert.ok(commits >= 1, 'the create was committed by the writer thread')
  })

  it('counts failed key reloads: animal_store_key_reload_failures_total rises while the keys cannot be read', async () => {
    const read = async () =>
      sample(await (await fetch(`${server.metricsOrigin}/metrics`)).text(), 'animal_store_key_reload_failures_total')
    const before = (await read()) ?? 0
    const reloading = await startServer({ database, metrics: true, keyRefreshMs: 20 })
    try {
      const failures = async () =>
        sample(await (await fetch(`${reloading.metricsOrigin}/metrics`)).text(), 'animal_store_key_reload_failures_total') ?? 0
      assert.equal(await failures(), 0)
      await sql`alter table api_keys rename to api_keys_away`.execute(reloading.store.db)
      try {
        await within(
          (async () => {
            while ((await failures()) < 2) await new Promise((resolve) => setTimeout(resolve, 20))
          })(),
          5_000,
          'no failed reload was counted',
        )
      } finally {
        await sql`alter table api_keys_away rename to api_keys`.execute(reloading.store.db)
      }
      assert.ok(reloading.logs.some((line) => line.includes('reloading API keys failed')))
    } finally {
      await reloading.close()
    }
    assert.equal(await read(), before, "another server's failures are not this one's")
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

describe('http_request_duration_seconds buckets', () => {
  it('reach past the longest a request can last (timeouts, statement timeout, shutdown grace)', () => {
    const longest = Math.max(
      SERVER_TIMEOUTS.requestTimeout,
      SERVER_TIMEOUTS.connectionTimeout,
      DEFAULT_STATEMENT_TIMEOUT_MS,
      SHUTDOWN_GRACE_MS,
    )
    assert.ok((REQUEST_DURATION_BUCKETS.at(-1) ?? 0) > longest / 1000, `${REQUEST_DURATION_BUCKETS.at(-1)} s`)
    assert.deepEqual(
      [...REQUEST_DURATION_BUCKETS].sort((a, b) => a - b),
      REQUEST_DURATION_BUCKETS,
    )
  })
})

describe('metrics of `serve` with WORKERS=2', () => {
  const dir = tempDir()
  const API_KEY = 'W0rker-M3trics-k7Qz9-Lm2Xp-Rv8Tb-Hd5Nc'
  before(assertBuilt)
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('never lets a counter go down when a worker is killed, and counts the restart', async () => {
    const server = await startServe(
      cliEnv({ DATABASE_URL: `sqlite:${dir.path}/w.db`, API_KEYS: API_KEY, WORKERS: '2', LOG_LEVEL: 'info' }),
    )
    try {
      const list = '{operation="listPets",method="GET",status="200"}'
      const scrape = async () => (await fetch(`${server.metricsOrigin}/metrics`)).text()
      const statuses = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          fetch(`${server.origin}/v1/pets`, { headers: { authorization: `Bearer ${API_KEY}`, 'x-request-id': `w2-${i}` } }).then(
            (response) => response.status,
          ),
        ),
      )
      assert.deepEqual(new Set(statuses), new Set([200]))
      const before = await scrape()
      assert.equal(sample(before, `http_requests_total${list}`), 100)
      assert.equal(sample(before, 'animal_store_worker_restarts_total'), 0)
      // The built service names the commit it was built from.
      const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim()
      const build = new RegExp(
        `^animal_store_build_info\\{version="1\\.0\\.0",commit="${head}(-dirty)?",node="[^"]+",database="sqlite"\\} 1$`,
        'm',
      )
      assert.match(before, build)

      // The worker that answered the first request dies without a chance to say goodbye.
      const line = await server.waitForLine(/"reqId":"w2-0"/)
      const pid = (JSON.parse(line) as { pid: number }).pid
      assert.notEqual(pid, server.pid)
      process.kill(pid, 'SIGKILL')
      const after = await within(
        (async () => {
          for (;;) {
            const text = await scrape()
            if (sample(text, 'animal_store_worker_restarts_total') === 1) return text
            await new Promise((resolve) => setTimeout(resolve, 50))
          }
        })(),
        10_000,
        'the killed worker was not replaced',
      )
      assert.ok((sample(after, `http_requests_total${list}`) ?? 0) >= 100, 'the summed counter did not drop')
      assert.equal(sample(await scrape(), `http_requests_total${list}`), 100)
      assert.match(after, build, 'build info stays 1, not the number of workers')
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server.kill()
    }
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
