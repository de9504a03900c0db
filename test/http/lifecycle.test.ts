// The served process: health/readiness probes, graceful shutdown on SIGTERM/SIGINT, and the pino request log (one line per request, no secrets).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Agent, request } from 'node:http'
import type { Socket } from 'node:net'
import { after, before, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { describeEachDatabase, freshDatabase, type TestDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { SHUTDOWN_GRACE_MS } from '../../src/commands/serve.js'
import {
  assertBuilt,
  cliEnv,
  connectionRefused,
  GENERATED_KEY,
  jsonLines,
  killLeftovers,
  runCli,
  type ServeProcess,
  startServe,
  within,
} from '../support/cli-process.js'

const KEY = 'lifecycle-key_0123456789abcdefXYZ'
const WRONG_KEY = 'wrong-key_0123456789abcdefXYZ000'

/** A fresh database (SQLite file or PostgreSQL database) for one test; `cleanup` removes it. */
async function testDatabase(database: TestDatabase) {
  const dir = tempDir()
  const fresh = await freshDatabase(database, dir.path)
  return {
    url: fresh.url,
    async cleanup() {
      await fresh.drop()
      dir.remove()
    },
  }
}

interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  text: string
}

/** A request whose body is held back, in flight on the server; see heldPost. */
interface HeldRequest {
  /** Writes the body; resolves with the response. */
  send(): Promise<Reply>
  /** Whether the response has been received. */
  done(): boolean
  /** Resolves when the server closes the connection; rejects after `ms`. */
  closedWithin(ms: number): Promise<void>
}

/**
 * A POST /v1/pets whose body is held back: resolves once the server has parsed its headers (it
 * answered `Expect: 100-continue`), so the request is provably in flight; `send()` then writes the
 * body. With `keepAlive`, the client asks to keep the connection open, as HTTP/1.1 clients do.
 */
async function heldPost(server: ServeProcess, body: string, keepAlive: boolean): Promise<HeldRequest> {
  const agent = new Agent({ keepAlive })
  const req = request({
    host: '127.0.0.1',
    port: server.port,
    method: 'POST',
    path: '/v1/pets',
    agent,
    headers: {
      authorization: `Bearer ${KEY}`,
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      expect: '100-continue',
    },
  })
  let finished = false
  const socket = new Promise<Socket>((resolve) => req.once('socket', resolve))
  const reply = new Promise<Reply>((resolve, reject) => {
    req.once('error', reject)
    req.once('response', (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        text += chunk
      })
      response.once('error', reject)
      response.once('end', () => {
        finished = true
        resolve({ status: response.statusCode ?? 0, headers: response.headers, text })
      })
    })
  })
  reply.catch(() => {})
  req.flushHeaders()
  await within(once(req, 'continue'), 5_000, 'the server did not answer 100-continue')
  const closed = socket.then((s) => (s.closed ? undefined : once(s, 'close').then(() => undefined)))
  closed.finally(() => agent.destroy()).catch(() => {})
  return {
    send: () => {
      req.end(body)
      return within(reply, 5_000, 'the in-flight request got no response')
    },
    done: () => finished,
    closedWithin: (ms) => within(closed, ms, 'the server kept the connection open'),
  }
}

/** Polls until a new connection to `port` is refused; false if it is still accepted after `ms`. */
async function refusedWithin(port: number, ms: number): Promise<boolean> {
  for (const stopAt = Date.now() + ms; Date.now() < stopAt; await delay(25)) {
    if (await connectionRefused(port)) return true
  }
  return false
}

describeEachDatabase('service lifecycle', (database) => {
  before(() => assertBuilt())
  after(() => killLeftovers())

  it('answers GET /healthz with 200 {status: "ok"} and GET /readyz with 200 {status: "ready"}, without an API key', async () => {
    const db = await testDatabase(database)
    const server = await startServe(cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY }))
    try {
      const health = await fetch(`${server.origin}/healthz`)
      assert.equal(health.status, 200)
      assert.match(health.headers.get('content-type') ?? '', /^application\/json/)
      assert.deepEqual(await health.json(), { status: 'ok' })
      const ready = await fetch(`${server.origin}/readyz`)
      assert.equal(ready.status, 200)
      assert.deepEqual(await ready.json(), { status: 'ready' })
      assert.equal((await fetch(`${server.origin}/v1/pets`)).status, 401, 'the API itself does require a key')
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server.kill()
      await db.cleanup()
    }
  })

  /**
   * Holds a POST in flight, sends `signal`, and checks: the closing log line, new connections refused
   * while the request is still open, the request's 201. Returns what the caller checks next.
   */
  async function shutDownWithRequestInFlight(server: ServeProcess, signal: NodeJS.Signals, keepAlive: boolean) {
    // An idle keep-alive connection (fetch keeps one), which must not hold the shutdown up.
    assert.equal((await fetch(`${server.origin}/healthz`)).status, 200)
    const name = `in flight during ${signal}`
    const held = await heldPost(server, `{"name":${JSON.stringify(name)},"categoryId":9007199254740993}`, keepAlive)

    const signalledAt = Date.now()
    process.kill(server.pid, signal)
    const closing = JSON.parse(await server.waitForLine(/"msg":"closing: finishing in-flight requests"/, 5_000))
    assert.equal(closing.signal, signal)
    assert.ok(await refusedWithin(server.port, 3_000), 'new connections are still accepted 3 s after the closing log line')
    assert.equal(held.done(), false, 'the held request cannot have been answered before its body was sent')

    const reply = await held.send()
    assert.equal(reply.status, 201, reply.text)
    const pet = JSON.parse(reply.text)
    assert.equal(pet.name, name)
    assert.match(reply.text, /"categoryId":9007199254740993[,}]/)
    return { held, pet, signalledAt }
  }

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`on ${signal} finishes the in-flight request with 201, refuses new connections and exits 0 within ${SHUTDOWN_GRACE_MS / 1000} s`, async (t) => {
      const db = await testDatabase(database)
      const env = cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY })
      let server = await startServe(env)
      try {
        const { pet, signalledAt } = await shutDownWithRequestInFlight(server, signal, false)
        const exit = await within(
          server.exited,
          SHUTDOWN_GRACE_MS,
          `serve did not exit within ${SHUTDOWN_GRACE_MS} ms of ${signal}`,
        )
        t.diagnostic(`exited ${Date.now() - signalledAt} ms after ${signal}`)
        assert.deepEqual(exit, { code: 0, signal: null }, server.stdout())
        assert.equal(await connectionRefused(server.port), true, 'a new connection after exit is refused')
        assert.equal(server.stderr(), '')

        server = await startServe(env)
        const read = await fetch(`${server.origin}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${KEY}` } })
        assert.equal(read.status, 200, 'the pet acknowledged during shutdown was stored')
        assert.equal(((await read.json()) as { name: string }).name, pet.name)
        assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
      } finally {
        server.kill()
        await db.cleanup()
      }
    })
  }

  it('on SIGTERM closes a kept-alive connection once its in-flight response is sent, and exits 0 promptly', async () => {
    const db = await testDatabase(database)
    const server = await startServe(cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY }))
    try {
      const { held } = await shutDownWithRequestInFlight(server, 'SIGTERM', true)
      await held.closedWithin(2_000)
      assert.deepEqual(await within(server.exited, 2_000, 'serve did not exit within 2 s of its last response'), {
        code: 0,
        signal: null,
      })
    } finally {
      server.kill()
      await db.cleanup()
    }
  })

  it('logs one pino JSON line with msg "request" per request (method, route, status, durationMs, reqId) and never an API key', async () => {
    const db = await testDatabase(database)
    const env = cliEnv({ DATABASE_URL: db.url, API_KEYS: KEY })
    const server = await startServe(env)
    try {
      const created = await runCli(['keys', 'create', '--name', 'logs'], env)
      assert.equal(created.code, 0, created.stderr)
      const storedKey = created.stdout.trimEnd().split('\n').at(-1) ?? ''
      assert.match(storedKey, GENERATED_KEY)

      const sent: Array<{ method: string; path: string; key?: string; body?: string; status: number; route: string | null }> = [
        { method: 'GET', path: '/healthz', status: 200, route: '/healthz' },
        { method: 'GET', path: '/readyz', status: 200, route: '/readyz' },
        { method: 'GET', path: '/v1/pets', key: KEY, status: 200, route: '/v1/pets' },
        { method: 'POST', path: '/v1/pets', key: KEY, body: '{"name":"Rex","categoryId":1}', status: 201, route: '/v1/pets' },
        { method: 'POST', path: '/v1/pets', key: storedKey, body: '{"name":""}', status: 400, route: '/v1/pets' },
        { method: 'GET', path: '/v1/pets/1', key: storedKey, status: 200, route: '/v1/pets/:petId' },
        { method: 'GET', path: '/v1/pets/999999', key: KEY, status: 404, route: '/v1/pets/:petId' },
        { method: 'GET', path: '/v1/pets', key: WRONG_KEY, status: 401, route: '/v1/pets' },
        { method: 'GET', path: '/v1/pets', status: 401, route: '/v1/pets' },
        { method: 'GET', path: '/v1/nowhere', key: KEY, status: 404, route: null },
      ]
      const requestIds: string[] = []
      for (const item of sent) {
        const headers: Record<string, string> = {}
        if (item.key) headers.authorization = `Bearer ${item.key}`
        if (item.body) headers['content-type'] = 'application/json'
        const response = await fetch(server.origin + item.path, { method: item.method, headers, body: item.body })
        await response.arrayBuffer()
        assert.equal(response.status, item.status, `${item.method} ${item.path}`)
        const id = response.headers.get('x-request-id')
        assert.ok(id, `no x-request-id on ${item.method} ${item.path}`)
        requestIds.push(id)
      }
      assert.equal(new Set(requestIds).size, sent.length, 'request ids are unique')
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })

      const stdout = server.stdout()
      const stderr = server.stderr()
      assert.equal(stderr, '')
      for (const line of stdout.split('\n').filter(Boolean)) {
        if (line.startsWith('{')) continue
        assert.match(
          line,
          /^(API keys: |Prometheus metrics on |Animal Store listening on )/,
          `stdout line that is neither a log nor the banner: ${line}`,
        )
      }
      const logs = jsonLines(stdout)
      for (const log of logs) {
        assert.equal(typeof log.level, 'number')
        assert.equal(typeof log.time, 'number')
        assert.equal(typeof log.msg, 'string')
      }
      const requestLogs = logs.filter((log) => log.msg === 'request')
      assert.equal(requestLogs.length, sent.length, 'one request line per request, no more')
      sent.forEach((item, index) => {
        const lines = requestLogs.filter((log) => log.reqId === requestIds[index])
        assert.equal(lines.length, 1, `request lines for ${item.method} ${item.path}`)
        const [log] = lines
        assert.equal(log?.method, item.method)
        assert.equal(log?.route, item.route, `route of ${item.method} ${item.path}`)
        assert.equal(log?.status, item.status)
        assert.equal(typeof log?.durationMs, 'number')
        assert.ok(Number(log?.durationMs) >= 0 && Number(log?.durationMs) < 10_000)
      })
      for (const secret of [KEY, WRONG_KEY, storedKey, storedKey.slice(12)]) {
        assert.equal(`${stdout}${stderr}`.includes(secret), false, `the output contains ${secret.slice(0, 8)}…`)
      }
    } finally {
      server.kill()
      await db.cleanup()
    }
  })
})
