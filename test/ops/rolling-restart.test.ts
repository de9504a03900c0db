// A rolling restart through the shipped deploy/nginx.conf (docs/deploying.md, "Graceful shutdown and
// rolling deploys"): two instances on one database, restarted one after the other, each as soon as
// the one before answers, three times in a row, under client load: no client sees a 5xx or a failed
// request, and every create answered 201 is stored exactly once.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { freePort } from '../../scripts/lib/postgres-server.js'
import { freshDatabase, TEST_DATABASES, tempDir } from '../../scripts/lib/test-server.js'
import { SHUTDOWN_GRACE_MS } from '../../src/commands/serve.js'
import { assertCreatesStoredOnce, type Load, serverErrors, startLoad } from '../support/balancer-load.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, startServe, within } from '../support/cli-process.js'
import { type Nginx, startShippedNginx } from '../support/nginx.js'
import { nginxRetryMs } from '../support/nginx-retry.js'

const KEY = 'rolling-restart-key-0123456789abcdef'
const ROLLS = 3
/** One process per instance: stopping WORKERS=2 through nginx is stop-signals.test.ts's subject, and each start costs. */
const WORKERS = '1'
const CLIENTS = 6
/** The shortest drain deploy/nginx.conf allows (docs/deploying.md), plus a margin for this shared machine. */
const DRAIN_MS = nginxRetryMs() + 500

describe(`a rolling restart of two instances through deploy/nginx.conf (WORKERS=${WORKERS}, SHUTDOWN_DRAIN_MS=${DRAIN_MS})`, () => {
  const dir = tempDir()
  const database = TEST_DATABASES[0] ?? 'sqlite'
  let drop = async () => {}
  let env: (port: number) => NodeJS.ProcessEnv
  const instances: ServeProcess[] = []
  let ports: [number, number]
  let nginx: Nginx | undefined
  let load: Load | undefined

  before(async () => {
    assertBuilt()
    const fresh = await freshDatabase(database, dir.path)
    drop = fresh.drop
    env = (port) =>
      cliEnv({
        DATABASE_URL: fresh.url,
        API_KEYS: KEY,
        WORKERS,
        PORT: String(port),
        SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
        LOG_LEVEL: 'warn',
      })
    ports = [await freePort(), await freePort()]
    for (const port of ports) instances.push(await startServe(env(port)))
    nginx = await startShippedNginx(ports)
  })

  after(async () => {
    await load?.stop()
    await nginx?.stop()
    await Promise.all(instances.map((instance) => instance.stop('SIGTERM', DRAIN_MS + SHUTDOWN_GRACE_MS)))
    killLeftovers()
    await drop()
    dir.remove()
  })

  it(`restarts each instance in turn, ${ROLLS} times, with no 5xx and no failed request, and stores every create once [${database}]`, async (t) => {
    assert.ok(nginx)
    load = startLoad(nginx.origin, KEY, 'rolled', CLIENTS)
    await load.more(100)
    const stops: string[] = []
    const starts: string[] = []
    for (let roll = 1; roll <= ROLLS; roll++) {
      for (const [i, port] of ports.entries()) {
        const old = instances[i] as ServeProcess
        const signalledAt = Date.now()
        process.kill(old.pid, 'SIGTERM')
        const exit = await within(old.exited, DRAIN_MS + SHUTDOWN_GRACE_MS, `instance ${i} did not exit`)
        assert.deepEqual(exit, { code: 0, signal: null }, old.stdout())
        stops.push(`${((Date.now() - signalledAt) / 1000).toFixed(1)} s`)
        // An orchestrator starts the next stop once the restarted instance answers, and waits no longer.
        const startedAt = Date.now()
        instances[i] = await startServe(env(port))
        starts.push(`${((Date.now() - startedAt) / 1000).toFixed(1)} s`)
      }
    }
    await load.more(100)
    const result = await load.stop()
    load = undefined
    t.diagnostic(
      `${ROLLS} rolls (stops took ${stops.join(', ')}; starts ${starts.join(', ')}): answers ${JSON.stringify(result.statuses)}, failed requests ${JSON.stringify(result.failures)}`,
    )
    t.diagnostic(`nginx error log:\n${nginx.errorLog().trim() || '(empty)'}`)
    assert.deepEqual(result.failures, {}, 'no request failed')
    assert.deepEqual(serverErrors(result), {}, 'no 5xx')
    assert.doesNotMatch(nginx.errorLog(), /no live upstreams|reset by peer|prematurely closed/)
    await assertCreatesStoredOnce(nginx.origin, KEY, 'rolled', result.created)
  })
})
