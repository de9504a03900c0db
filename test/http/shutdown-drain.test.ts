// A graceful SIGTERM under keep-alive load (docs/deploying.md, "Graceful shutdown and rolling
// deploys"): /readyz turns 503 first while every request is still served for SHUTDOWN_DRAIN_MS, then
// the listener closes; no request is reset, every one sent gets a whole answer, and the process exits 0.
// Alone and with WORKERS=2 (the primary passes the signal to each worker, which drains itself and
// closes a socket of its own), with clients that never stop sending: each loop ends on a refused
// connection.
import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, startServe } from '../support/cli-process.js'

const KEY = 'drain-key_0123456789abcdefXYZ4567'
const DRAIN_MS = 1500
const LOOPS = 8

interface Outcome {
  status: number
  /** Whether the body was the whole JSON it announced. */
  whole: boolean
  at: number
}

/** One GET on `agent`; resolves with its outcome, or rejects with the socket error (code). */
function get(agent: Agent, port: number, path: string, headers: Record<string, string> = {}): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        text += chunk
      })
      response.on('error', reject)
      response.on('end', () => {
        let whole = false
        try {
          JSON.parse(text)
          whole = response.complete
        } catch {}
        resolve({ status: response.statusCode ?? 0, whole, at: Date.now() })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

for (const workers of ['1', '2']) {
  describe(`SIGTERM under keep-alive load (WORKERS=${workers}, SHUTDOWN_DRAIN_MS=${DRAIN_MS})`, () => {
    const dir = tempDir()
    before(() => assertBuilt())
    after(() => {
      killLeftovers()
      dir.remove()
    })

    it('turns /readyz 503 first, keeps serving through the drain, resets nothing, answers every request whole, exits 0', async (t) => {
      const server = await startServe(
        cliEnv({
          DATABASE_URL: `sqlite:${dir.path}/drain-${workers}.db`,
          API_KEYS: KEY,
          WORKERS: workers,
          SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
          LOG_LEVEL: 'warn',
        }),
      )
      try {
        const outcomes: Outcome[] = []
        const failures: string[] = []
        let refused = 0
        const agent = new Agent({ keepAlive: true, maxSockets: LOOPS })
        const loop = async () => {
          for (;;) {
            try {
              outcomes.push(await get(agent, server.port, '/v1/pets?limit=1', { authorization: `Bearer ${KEY}` }))
            } catch (error) {
              const code = (error as NodeJS.ErrnoException).code ?? String(error)
              // Refused at connect: the listener is gone and nothing was sent; a client tries elsewhere.
              if (code === 'ECONNREFUSED') {
                refused++
                return
              }
              failures.push(code)
              return
            }
          }
        }
        const probes: Outcome[] = []
        const probeAgent = new Agent({ keepAlive: true, maxSockets: 1 })
        const probe = async () => {
          for (;;) {
            const outcome = await get(probeAgent, server.port, '/readyz').catch(() => undefined)
            if (!outcome) return
            probes.push(outcome)
            await new Promise((resolve) => setTimeout(resolve, 50)) // a balancer's polling interval
          }
        }
        const loops = Array.from({ length: LOOPS }, loop)
        while (outcomes.length < 200) await new Promise((resolve) => setImmediate(resolve))
        const signalledAt = Date.now()
        process.kill(server.pid, 'SIGTERM')
        const probing = probe()
        await Promise.all([...loops, probing])
        const exit = await server.exited
        agent.destroy()
        probeAgent.destroy()

        const afterSignal = outcomes.filter((outcome) => outcome.at > signalledAt)
        const firstNotReady = probes.find((outcome) => outcome.status === 503)
        t.diagnostic(
          `${outcomes.length} answers (${afterSignal.length} after SIGTERM, the last ${
            (afterSignal.at(-1)?.at ?? signalledAt) - signalledAt
          } ms after it), ${failures.length} resets or other errors, ${refused} loops refused at connect; /readyz 503 ${
            firstNotReady ? `${firstNotReady.at - signalledAt} ms` : 'never'
          } after SIGTERM`,
        )
        assert.deepEqual(failures, [], 'no request reset or cut off')
        assert.equal(refused, LOOPS, 'each loop ended on a refused connection')
        assert.ok(
          outcomes.every((outcome) => outcome.status === 200 && outcome.whole),
          'every request sent got a whole 200',
        )
        assert.ok(firstNotReady, '/readyz answered 503 during the drain')
        // A probe already in flight when the signal lands may still be answered 200; from the first
        // 503 on, readiness never comes back.
        assert.ok(firstNotReady.at - signalledAt < 1_000, 'readiness turned false within 1 s of the signal')
        assert.ok(
          probes.filter((outcome) => outcome.at >= firstNotReady.at).every((outcome) => outcome.status === 503),
          '/readyz stays 503 once it is',
        )
        assert.ok(
          afterSignal.some((outcome) => outcome.at - signalledAt >= DRAIN_MS * 0.8),
          'requests were still served near the end of the drain',
        )
        assert.deepEqual(exit, { code: 0, signal: null }, server.stdout())
      } finally {
        server.kill()
      }
    })
  })
}
