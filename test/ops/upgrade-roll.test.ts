// A release upgrades from the previous one in a roll, and rolls back (docs/deploying.md, "Upgrades
// and rollbacks"): the previous release (built from its pinned revision, previous-release.ts) serves
// creates (with and without an Idempotency-Key), lists and gets throughout while this release runs
// `migrate` and serves beside it; this release is then stopped (the rollback), and the previous one
// restarts on the migrated schema. Not one request may fail, and every acknowledged pet is kept.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { buildRelease, PREVIOUS_RELEASE } from '../../scripts/lib/previous-release.js'
import { freshDatabase, TEST_DATABASES, tempDir } from '../../scripts/lib/test-server.js'
import { cliEnv, killLeftovers, runCli, type ServeProcess, startServe } from '../support/cli-process.js'

const API_KEY = 'upgrade-roll-test-key-0123456789abcdef'
const AUTH = { authorization: `Bearer ${API_KEY}` }

/**
 * Four request loops over `targets` (changed while they run, as a balancer's pool is) until stop():
 * a create, a create with a fresh Idempotency-Key, a page, a get of the last pet acknowledged.
 * `drain(origin)` takes an origin out and resolves once no request to it is in flight.
 */
function traffic(targets: string[]) {
  const failures: string[] = []
  const acknowledged = new Map<string, string>()
  const inFlight = new Map<string, number>()
  const answered = new Map<string, number>()
  let lastId = ''
  let running = true
  const request = async (origin: string, step: number, name: string) => {
    if (step === 2) return fetch(`${origin}/v1/pets?limit=5`, { headers: AUTH })
    if (step === 3 && lastId !== '') return fetch(`${origin}/v1/pets/${lastId}`, { headers: AUTH })
    const headers: Record<string, string> = { ...AUTH, 'content-type': 'application/json' }
    if (step === 1) headers['idempotency-key'] = randomUUID()
    return fetch(`${origin}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name, categoryId: step }) })
  }
  const loop = async (l: number) => {
    for (let i = 0; running; i++) {
      const origin = targets[(l + i) % targets.length] as string
      const name = `roll ${l}-${i}`
      inFlight.set(origin, (inFlight.get(origin) ?? 0) + 1)
      try {
        const response = await request(origin, i % 4, name)
        const text = await response.text()
        if (response.status === 201) {
          lastId = /"id":(\d+)/.exec(text)?.[1] ?? ''
          acknowledged.set(lastId, name)
        } else if (response.status !== 200) failures.push(`${origin}: ${response.status} ${text}`)
        answered.set(origin, (answered.get(origin) ?? 0) + 1)
      } catch (error) {
        failures.push(`${origin}: ${String((error as Error).cause ?? error)}`)
      } finally {
        inFlight.set(origin, (inFlight.get(origin) ?? 1) - 1)
      }
    }
  }
  const loops = Promise.all(Array.from({ length: 4 }, (_, l) => loop(l)))
  const until = async (condition: () => boolean, what: string) => {
    for (const stopAt = Date.now() + 15_000; !condition(); await new Promise((r) => setTimeout(r, 5))) {
      assert.ok(Date.now() < stopAt, what)
    }
  }
  return {
    failures,
    acknowledged,
    /** Resolves once `origin` answered `count` more requests. */
    more: (origin: string, count: number) => {
      const target = (answered.get(origin) ?? 0) + count
      return until(() => (answered.get(origin) ?? 0) >= target, `${origin} answered ${count} more`)
    },
    drain: async (origin: string) => {
      targets.splice(targets.indexOf(origin), 1)
      await until(() => (inFlight.get(origin) ?? 0) === 0, `requests to ${origin} finished`)
    },
    stop: async () => {
      running = false
      await loops
    },
  }
}

describe(`upgrade from the previous release (${PREVIOUS_RELEASE.slice(0, 7)}) and rollback`, () => {
  let previous: string
  before(() => {
    previous = buildRelease(PREVIOUS_RELEASE)
  })
  after(killLeftovers)

  for (const database of TEST_DATABASES) {
    it(`[${database}] serves without one error through migrate, a mixed fleet, the rollback and a restart`, async (t) => {
      const dir = tempDir()
      const db = await freshDatabase(database, dir.path)
      const env = cliEnv({ DATABASE_URL: db.url, API_KEYS: API_KEY, LOG_LEVEL: 'warn' })
      const servers: ServeProcess[] = []
      const serve = async (cli?: string) => {
        // SQLite: one file, so one process at a time may hold it for writing; WORKERS=1 each.
        const server = await startServe(env, 30_000, cli)
        servers.push(server)
        return server
      }
      try {
        const old = await serve(previous)
        const targets = [old.origin]
        const load = traffic(targets)
        try {
          await load.more(old.origin, 40)

          // The upgrade: this release's migrate, then this release beside the previous one.
          const migrated = await runCli(['migrate'], env)
          assert.equal(migrated.code, 0, migrated.stderr)
          // The previous release still creates keys on the migrated schema; they may create (write)
          // under the default rate limit, as every key could before.
          const byPrevious = await runCli(['keys', 'create', '--name', 'by-previous'], env, 15_000, previous)
          assert.equal(byPrevious.code, 0, byPrevious.stderr)
          const listed = await runCli(['keys', 'list'], env)
          assert.match(listed.stdout, /^\d+\s+by-previous\s+ask_\S+\s+write\s+default\s/m, listed.stdout)
          await load.more(old.origin, 20)
          const current = await serve()
          targets.push(current.origin)
          await load.more(current.origin, 40)
          await load.more(old.origin, 20)

          // The rollback: this release leaves; a new instance of the previous one starts on the
          // migrated schema, and the first previous-release instance restarts there too.
          await load.drain(current.origin)
          assert.deepEqual(await current.stop(), { code: 0, signal: null })
          const restarted = await serve(previous)
          targets.push(restarted.origin)
          await load.more(restarted.origin, 40)
          await load.drain(old.origin)
          assert.deepEqual(await old.stop(), { code: 0, signal: null })
          await load.more(restarted.origin, 40)
        } finally {
          await load.stop()
        }

        t.diagnostic(`${load.acknowledged.size} creates acknowledged, ${load.failures.length} failures`)
        assert.deepEqual(load.failures.slice(0, 5), [], 'no request failed at any step')
        const stored = new Map<string, string>()
        const last = servers.at(-1) as ServeProcess
        for (let path: string | undefined = '/v1/pets?limit=100'; path; ) {
          const response: Response = await fetch(last.origin + path, { headers: AUTH })
          assert.equal(response.status, 200)
          // ids here are far below 2^53: JSON.parse keeps them exact.
          for (const pet of (await response.json()) as Array<{ id: number; name: string }>) stored.set(String(pet.id), pet.name)
          path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
        }
        const lost = [...load.acknowledged].filter(([id, name]) => stored.get(id) !== name)
        assert.deepEqual(lost, [], 'every acknowledged pet is there after the rollback')
      } finally {
        for (const server of servers) server.kill()
        await db.drop()
        dir.remove()
      }
    })
  }
})
