// One stop, however it is signalled (docs/operating.md, "Stopping the service"), with WORKERS=2: a
// SIGTERM to the primary alone (Docker, Kubernetes) and to the whole process group (systemd's
// KillMode=control-group, `kill -TERM -PGID`) both drain under load behind the shipped
// deploy/nginx.conf and exit 0, with no failed request and no line at level 50 or above; a SIGTERM
// repeated within SIGTERM_REPEAT_WINDOW_MS is the same stop; a SIGTERM later than that, or a second
// SIGINT, ends the stop at once (exit 1).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { freePort } from '../../scripts/lib/postgres-server.js'
import { freshDatabase, TEST_DATABASES, tempDir } from '../../scripts/lib/test-server.js'
import { SHUTDOWN_GRACE_MS } from '../../src/commands/serve.js'
import { SIGTERM_REPEAT_WINDOW_MS } from '../../src/server/stop-signals.js'
import { assertCreatesStoredOnce, serverErrors, startLoad } from '../support/balancer-load.js'
import {
  assertBuilt,
  cliEnv,
  connectionRefused,
  jsonLines,
  killLeftovers,
  type ServeProcess,
  startServe,
  within,
} from '../support/cli-process.js'
import { type Nginx, startShippedNginx } from '../support/nginx.js'
import { nginxRetryMs } from '../support/nginx-retry.js'

const KEY = 'stop-signals-key-0123456789abcdef'
const CLIENTS = 6
/** Long enough for nginx to take a restarted instance back (deploy/nginx.conf), as a deployment's must be. */
const DRAIN_MS = nginxRetryMs() + 500
/** The drain of the tests of a second signal: longer than the window, so that one can come after it. */
const LONG_DRAIN_MS = SIGTERM_REPEAT_WINDOW_MS + 2_000
const database = TEST_DATABASES[0] ?? 'sqlite'

/** How a supervisor sends a signal to `server`: to its pid alone, or to its whole process group. */
type Target = 'primary' | 'group'
const send = (server: ServeProcess, target: Target, signal: NodeJS.Signals) =>
  process.kill(target === 'group' ? -server.pid : server.pid, signal)

/** The log lines of `server` at level 50 (error) or above. */
const errorLines = (server: ServeProcess) => jsonLines(server.stdout()).filter((line) => Number(line.level) >= 50)

/** The log lines of `server`'s workers that start their close. */
const closing = (server: ServeProcess) =>
  jsonLines(server.stdout()).filter((line) => line.msg === 'closing: finishing in-flight requests')

/** The requests `server` has answered, summed over its workers by the primary's metrics listener. */
async function requestsServed(server: ServeProcess): Promise<number> {
  const text = await (await fetch(`${server.metricsOrigin}/metrics`)).text()
  return [...text.matchAll(/^http_requests_total\{[^}]*\} (\d+)$/gm)].reduce((sum, match) => sum + Number(match[1]), 0)
}

/** Resolves once `check()` holds, looked at every 20 ms; rejects after `ms`, with `message()` when it is a function (read then). */
async function until(check: () => boolean | Promise<boolean>, ms: number, message: string | (() => string)): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${typeof message === 'function' ? message() : message} (after ${ms} ms)`)
    await delay(20)
  }
}

/**
 * A POST whose body never comes, held in flight on `port`: resolves once the server has read its
 * headers (it answered `100 Continue`), so a close must wait for it.
 */
async function holdRequest(port: number): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port })
  socket.on('error', () => {}) // cut by the process's exit: what the test is about
  await once(socket, 'connect')
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: 40\r\nExpect: 100-continue\r\n\r\n`,
  )
  const [chunk] = (await within(once(socket, 'data'), 5_000, 'no 100 Continue')) as [Buffer]
  assert.match(chunk.toString(), /^HTTP\/1\.1 100 Continue/)
  return socket
}

describe(`SIGTERM with WORKERS=2 behind deploy/nginx.conf, under load (SHUTDOWN_DRAIN_MS=${DRAIN_MS}) [${database}]`, () => {
  const dir = tempDir()
  let drop = async () => {}
  let env: (port: number, workers: string) => NodeJS.ProcessEnv
  let port: number
  let other: ServeProcess | undefined
  let nginx: Nginx | undefined

  before(async () => {
    assertBuilt()
    const fresh = await freshDatabase(database, dir.path)
    drop = fresh.drop
    env = (port, workers) =>
      cliEnv({
        DATABASE_URL: fresh.url,
        API_KEYS: KEY,
        WORKERS: workers,
        PORT: String(port),
        SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
        LOG_LEVEL: 'info',
      })
    port = await freePort()
    other = await startServe(env(0, '1'))
    nginx = await startShippedNginx([port, other.port])
  })

  after(async () => {
    await nginx?.stop()
    await other?.stop('SIGTERM', DRAIN_MS + SHUTDOWN_GRACE_MS)
    killLeftovers()
    await drop()
    dir.remove()
  })

  for (const [target, who] of [
    ['primary', 'the primary alone (Docker, Kubernetes)'],
    ['group', 'the whole process group (systemd, kill -TERM -PGID)'],
  ] as const) {
    it(`SIGTERM to ${who}: each worker drains once, the instance exits 0 after the drain, no request fails, nothing logged at level ≥ 50`, async (t) => {
      assert.ok(nginx)
      const server = await startServe(env(port, '2'), 15_000, undefined, { detached: true })
      const label = `stopped via ${target}`
      const load = startLoad(nginx.origin, KEY, label, CLIENTS)
      try {
        // nginx may still be keeping away from this port after the previous test's stop: wait until it sends here.
        await within(
          (async () => {
            while ((await requestsServed(server)) < 50) await load.more(10)
          })(),
          10_000,
          'nginx sent nothing to the instance',
        )
        const logBefore = nginx.errorLog().length
        const signalledAt = Date.now()
        send(server, target, 'SIGTERM')
        // systemd follows its KillSignal with SIGCONT, for a stopped process to take it.
        if (target === 'group') send(server, target, 'SIGCONT')
        const exit = await within(server.exited, DRAIN_MS + SHUTDOWN_GRACE_MS, 'the instance did not exit')
        const stoppedMs = Date.now() - signalledAt
        const result = await load.stop()
        const log = nginx.errorLog().slice(logBefore)
        const resets = log.match(/reset by peer|prematurely closed|Broken pipe/g)?.length ?? 0
        t.diagnostic(
          `exit ${JSON.stringify(exit)} after ${(stoppedMs / 1000).toFixed(2)} s; answers ${JSON.stringify(result.statuses)}; failed ${JSON.stringify(result.failures)}; resets in nginx's log: ${resets}`,
        )
        assert.deepEqual(exit, { code: 0, signal: null }, server.stdout())
        assert.ok(stoppedMs >= DRAIN_MS, `exited after the drain, not ${stoppedMs} ms after the signal`)
        assert.deepEqual(
          closing(server).map((line) => line.drainMs),
          [DRAIN_MS, DRAIN_MS],
          'each worker drained, once',
        )
        assert.deepEqual(errorLines(server), [])
        assert.doesNotMatch(server.stdout(), /exiting at once/)
        assert.deepEqual(result.failures, {}, 'no request failed')
        assert.deepEqual(serverErrors(result), {}, 'no 5xx')
        assert.equal(resets, 0, log)
        await assertCreatesStoredOnce(nginx.origin, KEY, label, result.created)
      } finally {
        await load.stop()
        server.kill()
      }
    })
  }
})

// Each test has an instance of its own: they run at once, their drains overlapping.
describe(`a second signal with WORKERS=2 (SHUTDOWN_DRAIN_MS=${LONG_DRAIN_MS}) [${database}]`, { concurrency: true }, () => {
  const dir = tempDir()
  let drop = async () => {}
  let env: NodeJS.ProcessEnv

  before(async () => {
    assertBuilt()
    const fresh = await freshDatabase(database, dir.path)
    drop = fresh.drop
    env = cliEnv({
      DATABASE_URL: fresh.url,
      API_KEYS: KEY,
      WORKERS: '2',
      SHUTDOWN_DRAIN_MS: String(LONG_DRAIN_MS),
      LOG_LEVEL: 'info',
    })
  })

  after(async () => {
    killLeftovers()
    await drop()
    dir.remove()
  })

  /** A WORKERS=2 instance in a process group of its own, both workers serving; stopped by SIGKILL at the end of `run`. */
  async function withInstance(run: (server: ServeProcess) => Promise<void>): Promise<void> {
    const server = await startServe(env, 15_000, undefined, { detached: true })
    try {
      await run(server)
    } finally {
      server.kill()
    }
  }

  it(`takes a SIGTERM to the primary then to the group within ${SIGTERM_REPEAT_WINDOW_MS} ms (systemd's ExecStop=kill then its KillMode=) as the same stop: exits 0 after the drain`, async (t) => {
    await withInstance(async (server) => {
      const signalledAt = Date.now()
      send(server, 'primary', 'SIGTERM')
      // A signal sent before the process took the one before merges with it: the primary has taken
      // the first once its metrics listener (closed by the stop) refuses connections.
      const metricsPort = Number(new URL(server.metricsOrigin ?? '').port)
      await until(() => connectionRefused(metricsPort), 2_000, 'the primary did not take the first SIGTERM')
      const againMs = Date.now() - signalledAt
      send(server, 'group', 'SIGTERM')
      const exit = await within(server.exited, LONG_DRAIN_MS + SHUTDOWN_GRACE_MS, 'did not exit')
      const stoppedMs = Date.now() - signalledAt
      const repeats = jsonLines(server.stdout()).filter((line) => /the same stop$/.test(String(line.msg)))
      t.diagnostic(
        `second SIGTERM ${againMs} ms after the first; exit ${JSON.stringify(exit)} after ${(stoppedMs / 1000).toFixed(2)} s; taken as the same stop by ${repeats.length} processes`,
      )
      assert.ok(againMs < SIGTERM_REPEAT_WINDOW_MS, `the test sent its second SIGTERM ${againMs} ms after the first`)
      assert.deepEqual(exit, { code: 0, signal: null }, server.stdout())
      assert.ok(stoppedMs >= LONG_DRAIN_MS, `exited after the drain, not ${stoppedMs} ms after the signal`)
      assert.ok(
        repeats.some((line) => line.pid === server.pid),
        'the primary took the second SIGTERM as the same stop',
      )
      assert.deepEqual(
        closing(server).map((line) => line.drainMs),
        [LONG_DRAIN_MS, LONG_DRAIN_MS],
        `each worker drained, once: ${server.stdout()}`,
      )
      assert.deepEqual(errorLines(server), [])
      assert.doesNotMatch(server.stdout(), /exiting at once/)
    })
  })

  for (const target of ['primary', 'group'] as const) {
    it(`ends the drain at once on a SIGTERM to the ${target} later than ${SIGTERM_REPEAT_WINDOW_MS} ms after the first: exits 1`, async (t) => {
      await withInstance(async (server) => {
        const signalledAt = Date.now()
        send(server, target, 'SIGTERM')
        await server.waitForLine(/"msg":"closing: stopping workers"/)
        // Deliberately later than the window: this is the second signal the test is about, not a readiness wait.
        await delay(SIGTERM_REPEAT_WINDOW_MS + 200 - (Date.now() - signalledAt))
        const againAt = Date.now()
        send(server, target, 'SIGTERM')
        const exit = await within(server.exited, LONG_DRAIN_MS, 'did not exit before the drain would have ended')
        t.diagnostic(
          `exit ${JSON.stringify(exit)} ${Date.now() - againAt} ms after the second SIGTERM, ${((Date.now() - signalledAt) / 1000).toFixed(2)} s after the first`,
        )
        assert.deepEqual(exit, { code: 1, signal: null }, server.stdout())
        assert.ok(Date.now() - signalledAt < LONG_DRAIN_MS, 'the drain was cut short')
        assert.match(server.stdout(), /"msg":"SIGTERM again \d+ ms into the stop[^"]*: exiting at once"/)
      })
    })
  }

  it('closes without a drain on SIGINT to the group (Ctrl-C), and ends at once on a second SIGINT, with a request still in flight: exits 1', async (t) => {
    await withInstance(async (server) => {
      const held = await holdRequest(server.port)
      const closed = once(held, 'close')
      const signalledAt = Date.now()
      send(server, 'group', 'SIGINT')
      // Both workers are closing, without a drain; the one with the held request waits for it.
      await until(
        () => closing(server).length === 2,
        5_000,
        () => `both workers did not start closing: ${server.stdout()}`,
      )
      assert.deepEqual(
        closing(server).map((line) => [line.signal, line.drainMs]),
        [
          ['SIGINT', 0],
          ['SIGINT', 0],
        ],
      )
      const againAt = Date.now()
      send(server, 'group', 'SIGINT')
      const exit = await within(server.exited, 2_000, 'did not exit on the second SIGINT')
      await within(closed, 2_000, 'the held connection was not closed')
      t.diagnostic(
        `exit ${JSON.stringify(exit)} ${Date.now() - againAt} ms after the second SIGINT, ${((Date.now() - signalledAt) / 1000).toFixed(2)} s after the first; the held request's connection closed unanswered`,
      )
      assert.deepEqual(exit, { code: 1, signal: null }, server.stdout())
      assert.match(server.stdout(), /"msg":"SIGINT again \d+ ms into the stop: exiting at once"/)
    })
  })
})
