// Fleet-wide rate limits through a real redis-server (RATE_LIMIT_STORE_URL): two `serve` processes on
// one database, and WORKERS=2 on one, hold one budget per API key and say so in RateLimit, while
// failed authentications are counted per process, never in the store; with the store SIGKILLed
// under load no request fails, each process warns once and counts the fallbacks, and once it is
// back the limits are fleet-wide again by themselves.
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { type RedisServer, startRedisServer } from '../../scripts/lib/redis-server.js'
import { freshDatabase, TEST_DATABASES, type TestDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { WINDOW_MS } from '../../src/http/pipeline/rate-limit.js'
import { LOG_FLUSH_MS } from '../../src/logger.js'
import {
  assertBuilt,
  cliEnv,
  jsonLines,
  killLeftovers,
  type ServeProcess,
  serveMetric,
  startServe,
  within,
} from '../support/cli-process.js'

const LIMIT = 30
const UNAVAILABLE = 'rate-limit store unavailable'
const START_MS = 60_000

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
}

/** A random API key (API_KEYS), so that no two tests share a budget in the one store. */
const newKey = () => `fleet-${randomBytes(24).toString('base64url')}`

/** GET /v1/pets on a new connection each time, so that WORKERS' processes take turns accepting. */
function list(origin: string, key: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const options = { agent: false, headers: { authorization: `Bearer ${key}`, ...headers } }
    const sent = request(`${origin}/v1/pets?limit=1`, options, (response) => {
      response.resume()
      response.once('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers }))
    })
    sent.once('error', reject)
    sent.end()
  })
}

const remaining = (answer: Answer) => Number(/;r=(\d+);/.exec(String(answer.headers.ratelimit))?.[1])

/**
 * `run(0)`, and `run(1)` (with a budget of its own: another key or address) when the first run
 * straddled the store's one-minute window, whose start refills every budget.
 */
async function inOneWindow<T>(run: (attempt: number) => Promise<T>): Promise<T> {
  const startedIn = Math.floor(Date.now() / WINDOW_MS)
  const result = await run(0)
  return Math.floor(Date.now() / WINDOW_MS) === startedIn ? result : run(1)
}

/** 60 lists with one key, alternating over `origins` (one at a time); the answers in order. */
async function sixtyLists(origins: string[], key: string): Promise<Answer[]> {
  const answers: Answer[] = []
  for (let i = 0; i < 2 * LIMIT; i++) answers.push(await list(origins[i % origins.length] as string, key))
  return answers
}

/** What a whole run's answers say: 200s, 429s, anything else. */
function tally(answers: Answer[]): { ok: number; limited: number; other: number[] } {
  return {
    ok: answers.filter((each) => each.status === 200).length,
    limited: answers.filter((each) => each.status === 429).length,
    other: answers.map((each) => each.status).filter((status) => status !== 200 && status !== 429),
  }
}

/** One turn of the event loop's timers, for loops that wait on a condition other requests make true. */
const oneTurn = () => new Promise((resolve) => setTimeout(resolve, 20))

/**
 * When (Date.now()) both instances count through the store again: a fresh key's first request on
 * `a` leaves limit - 1, and its second, on `b`, limit - 2 (counted per process it would be limit - 1).
 */
async function untilFleetWide(a: ServeProcess, b: ServeProcess, keys: string[], limit: number): Promise<number> {
  for (const key of keys) {
    const first = await list(a.origin, key)
    const second = await list(b.origin, key)
    if (remaining(first) === limit - 1 && remaining(second) === limit - 2) return Date.now()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`not fleet-wide again after ${keys.length} probes`)
}

describe('fleet-wide rate limits (RATE_LIMIT_STORE_URL, a real redis-server)', () => {
  let redis: RedisServer
  before(async () => {
    assertBuilt()
    redis = await startRedisServer()
  })
  after(async () => {
    killLeftovers()
    await redis?.destroy()
  })

  const serveOn = async (kind: TestDatabase, variables: Record<string, string>, count: number) => {
    const dir = tempDir()
    const database = await freshDatabase(kind, dir.path)
    const env = cliEnv({ DATABASE_URL: database.url, RATE_LIMIT_STORE_URL: redis.url, LOG_LEVEL: 'info', ...variables })
    // One first, so that it migrates alone; the others start on the migrated database. Bounded
    // generously: on a loaded machine WORKERS=2 on PostgreSQL has taken more than 15 s to listen.
    const servers = [await startServe(env, START_MS)]
    servers.push(...(await Promise.all(Array.from({ length: count - 1 }, () => startServe(env, START_MS)))))
    const stop = async () => {
      await Promise.all(servers.map((server) => server.stop('SIGTERM')))
      await database.drop()
      dir.remove()
    }
    return { servers, stop }
  }

  for (const kind of TEST_DATABASES) {
    describe(`on ${kind}`, () => {
      it(`two instances: 60 lists alternating with one key, limit ${LIMIT} -> at most 10 % over, RateLimit fleet-wide`, async (t) => {
        const keys = [newKey(), newKey()]
        const { servers, stop } = await serveOn(kind, { API_KEYS: keys.join(','), RATE_LIMIT_PER_MINUTE: String(LIMIT) }, 2)
        try {
          const answers = await inOneWindow((n) =>
            sixtyLists(
              servers.map((server) => server.origin),
              keys[n] as string,
            ),
          )
          const { ok, limited, other } = tally(answers)
          t.diagnostic(`two instances: ${ok} of ${answers.length} answered 200 at a limit of ${LIMIT}`)
          assert.deepEqual(other, [])
          assert.ok(ok <= LIMIT * 1.1 && ok >= LIMIT * 0.9, `${ok} answered 200`)
          assert.equal(ok + limited, 2 * LIMIT)
          // Each answer counts the other instance's requests too: 29, 28, … whichever instance answers.
          const okRemaining = answers.filter((each) => each.status === 200).map(remaining)
          assert.deepEqual(okRemaining.slice(0, 4), [LIMIT - 1, LIMIT - 2, LIMIT - 3, LIMIT - 4])
          const refused = answers.find((each) => each.status === 429)
          assert.equal(refused?.headers['ratelimit-policy'], `default;q=${LIMIT};w=60`)
          const retryAfter = Number(refused?.headers['retry-after'])
          assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`)
          assert.equal(remaining(refused as Answer), 0)
        } finally {
          await stop()
        }
      })

      it(`WORKERS=2: 60 lists with one key, limit ${LIMIT}, both workers answering -> at most 10 % over`, async (t) => {
        const keys = [newKey(), newKey()]
        const variables = { API_KEYS: keys.join(','), RATE_LIMIT_PER_MINUTE: String(LIMIT), WORKERS: '2' }
        const { servers, stop } = await serveOn(kind, variables, 1)
        const [server] = servers as [ServeProcess]
        try {
          const answers = await inOneWindow((n) => sixtyLists([server.origin], keys[n] as string))
          const { ok, other } = tally(answers)
          t.diagnostic(`WORKERS=2: ${ok} of ${answers.length} answered 200 at a limit of ${LIMIT}`)
          assert.deepEqual(other, [])
          assert.ok(ok <= LIMIT * 1.1 && ok >= LIMIT * 0.9, `${ok} answered 200`)
          // Request lines reach stdout in batches, at most LOG_FLUSH_MS after they are logged.
          let waiting = true
          const answeredBy = await within(
            new Promise<Set<unknown>>((resolve) => {
              const lines = () => jsonLines(server.stdout()).filter((line) => line.msg === 'request' && line.status === 200)
              const poll = () => {
                if (lines().length >= ok) resolve(new Set(lines().map((line) => line.pid)))
                else if (waiting) setTimeout(poll, 50)
              }
              poll()
            }),
            LOG_FLUSH_MS + 10_000,
            `fewer than ${ok} request lines on stdout`,
          ).finally(() => {
            waiting = false
          })
          assert.equal(answeredBy.size, 2, 'both workers answered')
        } finally {
          await stop()
        }
      })

      it('counts failed authentications per process, and keeps no counter per client address in the store', async (t) => {
        const perMinute = 10
        // Client addresses believed from X-Forwarded-For, unlike any other test's.
        const variables = { API_KEYS: newKey(), AUTH_FAILURES_PER_MINUTE: String(perMinute), TRUST_PROXY: 'loopback' }
        const { servers, stop } = await serveOn(kind, variables, 2)
        try {
          const stored = await redis.command('DBSIZE')
          const answers = await inOneWindow(async (n) => {
            const client = { 'x-forwarded-for': `203.0.113.${n + (kind === 'sqlite' ? 1 : 3)}` }
            const all: Answer[] = []
            for (let i = 0; i < 3 * perMinute; i++)
              all.push(await list((servers[i % 2] as ServeProcess).origin, newKey(), client))
            return all
          })
          const refusedWith401 = answers.filter((each) => each.status === 401).length
          t.diagnostic(
            `auth failures: ${refusedWith401} of ${answers.length} answered 401 at a limit of ${perMinute} on each of 2 instances`,
          )
          assert.equal(refusedWith401, 2 * perMinute)
          assert.deepEqual(new Set(answers.slice(2 * perMinute).map((each) => each.status)), new Set([429]))
          // A client naming a new address in each request (an IPv6 range through a trusted proxy) adds nothing to the store.
          for (let i = 0; i < 200; i++) {
            const address = { 'x-forwarded-for': `2001:db8:${i.toString(16)}:${kind === 'sqlite' ? 1 : 2}::1` }
            assert.equal((await list((servers[i % 2] as ServeProcess).origin, newKey(), address)).status, 401)
          }
          assert.equal(await redis.command('DBSIZE'), stored)
        } finally {
          await stop()
        }
      })

      it('redis-server SIGKILLed under load: no 5xx, one warning per process, the fallback counted, fleet-wide again after a restart', async (t) => {
        const limit = 20
        // The load rotates over many keys, so that it keeps asking the store for leases (a spent budget is
        // refused from memory until its window ends, without the store).
        const loadKeys = Array.from({ length: 100 }, newKey)
        const probeKeys = Array.from({ length: 200 }, newKey)
        const variables = { API_KEYS: [...loadKeys, ...probeKeys].join(','), RATE_LIMIT_PER_MINUTE: String(limit) }
        const { servers, stop } = await serveOn(kind, variables, 2)
        const [a, b] = servers as [ServeProcess, ServeProcess]
        const statuses: number[] = []
        let loading = true
        const loops = Array.from({ length: 4 }, async (_, loop) => {
          for (let i = loop; loading; i++) statuses.push((await list((i % 2 ? a : b).origin, loadKeys[i % 100] as string)).status)
        })
        const answered = async (count: number) => {
          for (const stopAt = Date.now() + 20_000; statuses.length < count && Date.now() < stopAt; ) await oneTurn()
          assert.ok(statuses.length >= count, `only ${statuses.length} answers`)
        }
        try {
          await answered(40)
          await redis.kill()
          const killedAt = statuses.length
          await Promise.all([a, b].map((server) => server.waitForLine(/rate-limit store unavailable/)))
          await answered(killedAt + 40)
          for (const server of [a, b]) {
            assert.equal(await serveMetric(server, 'animal_store_rate_limit_store_up'), 0)
            assert.ok((await serveMetric(server, 'animal_store_rate_limit_store_fallbacks_total')) > 0)
          }

          await redis.restart()
          const restartedAt = Date.now()
          const fleetWideAfterMs = await untilFleetWide(a, b, probeKeys, limit)
          t.diagnostic(`fleet-wide again ${(fleetWideAfterMs - restartedAt) / 1000} s after redis-server answered again`)
          assert.ok(fleetWideAfterMs - restartedAt < 5_000)
          await Promise.all([a, b].map((server) => server.waitForLine(/rate-limit store reachable again/)))
          loading = false
          await Promise.all(loops)
          const fiveHundreds = statuses.filter((status) => status >= 500).length
          t.diagnostic(`${statuses.length} requests under load, ${fiveHundreds} 5xx`)
          assert.deepEqual(
            statuses.filter((status) => status !== 200 && status !== 429),
            [],
          )
          for (const server of [a, b]) {
            const warnings = jsonLines(server.stdout()).filter((line) => String(line.msg).startsWith(UNAVAILABLE))
            assert.equal(warnings.length, 1, 'one warning per outage')
            assert.equal(warnings[0]?.level, 40)
            assert.equal(await serveMetric(server, 'animal_store_rate_limit_store_up'), 1)
          }
        } finally {
          loading = false
          await Promise.all(loops)
          await stop()
          await redis.restart()
        }
      })
    })
  }
})
