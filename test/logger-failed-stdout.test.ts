// A stdout that fails (its reader gone: a log shipper that died, a journald restart) stops the
// logging, never the service (src/logger.ts): requests are answered, an error line returns, the
// failure is said once on stderr and counted in the metrics, and SIGTERM still ends the process in
// its grace period. The service is the built CLI; its stdout is a real pipe whose read end is closed.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { get as httpGet } from 'node:http'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import Database from 'better-sqlite3'
import { tempDir } from '../scripts/lib/test-server.js'
import { SHUTDOWN_GRACE_MS } from '../src/commands/serve.js'
import { STDOUT_FAILED_MESSAGE } from '../src/logger.js'
import { assertBuilt, cliEnv, REPO_ROOT, within } from './support/cli-process.js'

const KEY = 'failed-stdout-key_0123456789abcdefXYZ'
const LISTENING = /^Animal Store listening on http:\/\/127\.0\.0\.1:(\d+)\/v1 /m
const METRICS = /^Prometheus metrics on (http:\/\/[^/\s]+)\/metrics$/m

/** A running `serve` whose stdout is a pipe to this process. */
interface PipedServe {
  child: ChildProcess
  origin: string
  metrics: string
  stderr: () => string
  /** Resolves once stdout has shown a line matching `pattern`. */
  stdoutLine: (pattern: RegExp) => Promise<void>
}

/** `serve` on the SQLite file `path`, its stdout a pipe this process reads; resolves once it listens. */
async function serveOnPipe(path: string): Promise<PipedServe> {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'cli.js'), 'serve'], {
    cwd: REPO_ROOT,
    env: cliEnv({ DATABASE_URL: `sqlite:${path}`, API_KEYS: KEY, PORT: '0', HOST: '127.0.0.1' }),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    child.stdout?.emit('seen')
  })
  const stdoutLine = (pattern: RegExp) =>
    within(
      new Promise<void>((resolve, reject) => {
        const check = () => pattern.test(stdout) && resolve()
        child.stdout?.on('seen', check)
        child.once('exit', () => reject(new Error(`serve exited:\n${stdout}\n${stderr}`)))
        check()
      }),
      15_000,
      `serve did not print ${pattern}`,
    )
  try {
    await stdoutLine(LISTENING)
  } catch (error) {
    child.kill('SIGKILL') // not yet in the caller's hands: nothing else would stop it
    throw error
  }
  return {
    child,
    origin: `http://127.0.0.1:${LISTENING.exec(stdout)?.[1]}`,
    metrics: `${METRICS.exec(stdout)?.[1]}/metrics`,
    stderr: () => stderr,
    stdoutLine,
  }
}

/** Closes this process's read end of the child's stdout: its next write to stdout fails with EPIPE. */
function closeReadEnd(child: ChildProcess): void {
  child.stdout?.destroy()
}

/** Sends SIGTERM; resolves with the exit code and the ms to the exit from `since` and from the signal; fails past `ms`. */
async function terminate(child: ChildProcess, since: number, ms: number): Promise<{ code: number | null; timing: string }> {
  const exited = once(child, 'exit') as Promise<[number | null]>
  const signalled = performance.now()
  child.kill('SIGTERM')
  const [code] = await within(exited, ms, 'serve did not exit after SIGTERM')
  const now = performance.now()
  return {
    code,
    timing: `dead stdout to clean exit ${Math.round(now - since)} ms, SIGTERM to exit ${Math.round(now - signalled)} ms`,
  }
}

/** GET `url` with the key, on a connection of its own that closes after the answer (none is left for the close to wait for). */
function get(url: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const request = httpGet(url, { headers: { authorization: `Bearer ${KEY}` }, agent: false, timeout: 5_000 }, (response) => {
      let text = ''
      response.setEncoding('utf8').on('data', (chunk: string) => {
        text += chunk
      })
      response.once('end', () => resolve({ status: response.statusCode ?? 0, text }))
    })
    request.once('timeout', () => request.destroy(new Error(`GET ${url} got no answer`)))
    request.once('error', reject)
  })
}

describe('a failed stdout (the log reader is gone)', () => {
  const dir = tempDir()
  const children: ChildProcess[] = []
  before(assertBuilt)
  after(() => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    dir.remove()
  })

  it('stops the logging, not the service: an error line returns, requests are answered, one stderr line, a counter, a clean SIGTERM', async (t) => {
    const path = join(dir.path, 'error-line.db')
    const server = await serveOnPipe(path)
    children.push(server.child)
    assert.equal((await get(`${server.origin}/v1/pets`)).status, 200)
    await server.stdoutLine(/"msg":"request"/)
    closeReadEnd(server.child)
    const deadSince = performance.now()

    // Nothing is batched: a 500's level-50 line, written at once, is the first write to the closed pipe.
    const outside = new Database(path)
    try {
      outside.exec('alter table pets rename to pets_away')
      assert.equal((await get(`${server.origin}/v1/pets`)).status, 500)
      outside.exec('alter table pets_away rename to pets')
    } finally {
      outside.close()
    }
    for (let i = 0; i < 20; i++) assert.equal((await get(`${server.origin}/v1/pets`)).status, 200, 'requests go on')
    assert.equal((await get(`${server.origin}/healthz`)).status, 200)
    const metrics = (await get(server.metrics)).text
    assert.match(metrics, /^animal_store_log_stdout_failures_total 1$/m)
    const said = server
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith(STDOUT_FAILED_MESSAGE))
    assert.deepEqual(said, [`${STDOUT_FAILED_MESSAGE} (EPIPE)`], 'said once on stderr, with the code')

    const { code, timing } = await terminate(server.child, deadSince, SHUTDOWN_GRACE_MS + 5_000)
    assert.equal(code, 0, server.stderr())
    t.diagnostic(timing)
  })

  it('exits on SIGTERM when its closing line is the first for the closed pipe (the flush at exit does not loop)', async (t) => {
    const server = await serveOnPipe(join(dir.path, 'exit-flush.db'))
    children.push(server.child)
    assert.equal((await get(`${server.origin}/v1/pets`)).status, 200)
    // Its line written (within LOG_FLUSH_MS), nothing is batched: the closing line is the next, and
    // the exit's flush the first write to the closed pipe.
    await server.stdoutLine(/"msg":"request"/)
    closeReadEnd(server.child)
    const { code, timing } = await terminate(server.child, performance.now(), SHUTDOWN_GRACE_MS + 5_000)
    assert.equal(code, 0, server.stderr())
    assert.ok(server.stderr().includes(`${STDOUT_FAILED_MESSAGE} (EPIPE)\n`), server.stderr())
    t.diagnostic(timing)
  })
})
