// Many processes on one database: two `serve` instances on one PostgreSQL (started at once, so they
// race to migrate), and WORKERS=2 on one port for each database, each worker on a socket of its own:
// distinct ids, every pet visible everywhere, no 5xx, keys shared and revocations honoured by every
// process.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, describe, it } from 'node:test'
import { freshDatabase, TEST_DATABASES, tempDir } from '../../scripts/lib/test-server.js'
import { KEY_REFRESH_MS } from '../../src/http/pipeline/key-cache.js'
import { workerListenOptions } from '../../src/server/cluster.js'
import { cliEnv, GENERATED_KEY, killLeftovers, runCli, startServe } from '../support/cli-process.js'

const API_KEY = 'scale-out-test-key-0123456789abcdef'

async function post(origin: string, key: string, name: string): Promise<{ status: number; id?: string }> {
  const response = await fetch(`${origin}/v1/pets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: `{"name":${JSON.stringify(name)},"categoryId":9007199254740993}`,
  })
  const text = await response.text()
  return { status: response.status, id: /"id":(\d+)/.exec(text)?.[1] }
}

/** How many sockets listen on TCP `port` on this machine (Linux's /proc/net/tcp and tcp6; state 0A). */
function listeningSockets(port: number): number {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  return ['/proc/net/tcp', '/proc/net/tcp6']
    .flatMap((table) => readFileSync(table, 'utf8').split('\n').slice(1))
    .map((line) => line.trim().split(/\s+/))
    .filter(([, local, , state]) => local?.endsWith(`:${hexPort}`) && state === '0A').length
}

async function allNames(origin: string, key: string): Promise<string[]> {
  const names: string[] = []
  let path: string | undefined = '/v1/pets?limit=100'
  while (path) {
    const response: Response = await fetch(origin + path, { headers: { authorization: `Bearer ${key}` } })
    assert.equal(response.status, 200)
    names.push(...((await response.json()) as Array<{ name: string }>).map((pet) => pet.name))
    path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
  }
  return names
}

async function statusWith(origin: string, key: string): Promise<number> {
  return (await fetch(`${origin}/v1/pets?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status
}

describe('scale-out', () => {
  after(killLeftovers)

  it('two instances on one PostgreSQL: one migration, distinct ids, shared pets and keys', {
    skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
  }, async (t) => {
    const dir = tempDir()
    const database = await freshDatabase('postgres', dir.path)
    const env = cliEnv({ DATABASE_URL: database.url, API_KEYS: API_KEY, LOG_LEVEL: 'warn' })
    const [a, b] = await Promise.all([startServe(env), startServe(env)])
    try {
      const migrations = await runCli(['migrate'], env)
      assert.match(migrations.stdout, /up to date/, 'the racing instances applied every migration')

      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => post(i % 2 ? a.origin : b.origin, API_KEY, `pet ${i}`)),
      )
      assert.deepEqual(new Set(results.map((r) => r.status)), new Set([201]))
      assert.equal(new Set(results.map((r) => r.id)).size, 200, 'ids are distinct across instances')
      const expected = Array.from({ length: 200 }, (_, i) => `pet ${i}`).sort()
      assert.deepEqual((await allNames(a.origin, API_KEY)).sort(), expected)
      assert.deepEqual((await allNames(b.origin, API_KEY)).sort(), expected)

      const created = await runCli(['keys', 'create', '--name', 'shared'], env)
      const key = created.stdout.split('\n').find((line) => GENERATED_KEY.test(line)) ?? ''
      assert.equal(await statusWith(a.origin, key), 200)
      assert.equal(await statusWith(b.origin, key), 200)
      const id = /API key (\d+)/.exec(created.stdout)?.[1] ?? ''
      assert.equal((await runCli(['keys', 'revoke', id], env)).code, 0)
      const revokedAt = Date.now()
      const deadline = revokedAt + KEY_REFRESH_MS + 1500
      const refusedAfter: number[] = []
      for (const origin of [a.origin, b.origin]) {
        while ((await statusWith(origin, key)) !== 401 && Date.now() < deadline) {}
        assert.equal(await statusWith(origin, key), 401, `${origin} refuses the revoked key`)
        refusedAfter.push(Date.now() - revokedAt)
      }
      t.diagnostic(`revoked key refused by both instances after ${Math.max(...refusedAfter)} ms`)
      assert.match(a.stderr() + b.stderr(), /^$/, 'no errors on stderr')
    } finally {
      await Promise.all([a.stop(), b.stop()])
      await database.drop()
      dir.remove()
    }
  })

  for (const kind of TEST_DATABASES) {
    it(`WORKERS=2 on ${kind}: one port, distinct ids, summed metrics, graceful exit`, async () => {
      const dir = tempDir()
      const database = await freshDatabase(kind, dir.path)
      const server = await startServe(cliEnv({ DATABASE_URL: database.url, API_KEYS: API_KEY, WORKERS: '2', LOG_LEVEL: 'warn' }))
      try {
        assert.match(server.stdout(), /with 2 workers/)
        assert.equal(listeningSockets(server.port), 2, 'each worker listens on a socket of its own')
        const results = await Promise.all(Array.from({ length: 200 }, (_, i) => post(server.origin, API_KEY, `w${i}`)))
        assert.deepEqual(new Set(results.map((r) => r.status)), new Set([201]))
        assert.equal(new Set(results.map((r) => r.id)).size, 200)
        assert.equal((await allNames(server.origin, API_KEY)).length, 200)
        assert.equal((await fetch(`${server.origin}/metrics`)).status, 401, 'no /metrics on the public port')
        const metrics = await (await fetch(`${server.metricsOrigin}/metrics`)).text()
        const created = /^http_requests_total\{operation="createPet",method="POST",status="201"\} (\d+)$/m.exec(metrics)?.[1]
        assert.equal(created, '200', 'metrics are summed over both workers')
        const exit = await server.stop('SIGTERM')
        assert.deepEqual(exit, { code: 0, signal: null })
      } finally {
        server.kill()
        await database.drop()
        dir.remove()
      }
    })
  }
})

describe('workerListenOptions', () => {
  it('gives each worker a socket of its own (SO_REUSEPORT) on Linux and FreeBSD from Node.js 22.12 and 23.1', () => {
    const own = { exclusive: true, reusePort: true }
    for (const version of ['22.12.0', '22.21.1', '23.1.0', '24.9.0', '26.0.0'])
      assert.deepEqual(workerListenOptions('linux', version), own, version)
    assert.deepEqual(workerListenOptions('freebsd', '24.9.0'), own)
  })

  it("leaves the workers on node:cluster's shared socket where Node or the system has no SO_REUSEPORT balancing", () => {
    for (const version of ['22.0.0', '22.11.0', '23.0.0']) assert.deepEqual(workerListenOptions('linux', version), {}, version)
    for (const platform of ['darwin', 'win32', 'openbsd']) assert.deepEqual(workerListenOptions(platform, '24.9.0'), {}, platform)
  })
})
