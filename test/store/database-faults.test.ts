// PostgreSQL's bad day under load, directly and through the shipped PgBouncer (deploy/pgbouncer.ini):
// a backend terminated while idle in transaction, the server SIGKILLed and restarted, the server
// stopped for 10 s. Two `serve` processes (one alone, one with WORKERS=2) take creates with and
// without an Idempotency-Key and lists throughout. Each fault: no process or worker exits, every
// answer is a 200, a 201 or a JSON 503 with Retry-After, no acknowledged create is lost, and creates
// succeed again soon after PostgreSQL accepts connections.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { type PgBouncer, startPgBouncer } from '../../scripts/lib/pgbouncer.js'
import { createDatabase, freePort, type PostgresServer, startPostgres } from '../../scripts/lib/postgres-server.js'
import { TEST_DATABASES } from '../../scripts/lib/test-server.js'
import { cliEnv, killLeftovers, type ServeProcess, startServe } from '../support/cli-process.js'
import { CONF, type Nginx, startShippedNginx } from '../support/nginx.js'

const API_KEY = 'database-faults-test-key-0123456789'
/** Longest from PostgreSQL accepting connections to a create's 201 on every process (ms). */
const RECOVERY_MS = { direct: 1000, pgbouncer: 2000 }

/** One answer the load saw. */
interface Answer {
  at: number
  origin: string
  status: number
  problem?: string
}

/**
 * Request loops over `origins` until stop(): creates without a key, creates with a fresh
 * Idempotency-Key (as the shipped client sends), lists. A refused connection or a reset is recorded
 * as status 0. After a 503 a loop waits 20 ms (pacing: a client honouring Retry-After waits longer).
 */
function load(origins: string[]) {
  const answers: Answer[] = []
  const acknowledged = new Map<string, string>()
  let running = true
  const loop = async (l: number) => {
    for (let i = 0; running; i++) {
      const origin = origins[(l + i) % origins.length] as string
      const kind = i % 4
      const name = `fault ${l}-${i}`
      const headers: Record<string, string> = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' }
      if (kind >= 2) headers['idempotency-key'] = randomUUID()
      let answer: Answer
      try {
        const response =
          kind === 0
            ? await fetch(`${origin}/v1/pets?limit=5`, { headers })
            : await fetch(`${origin}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name, categoryId: i }) })
        const text = await response.text()
        answer = { at: Date.now(), origin, status: response.status, problem: check(response, text) }
        if (response.status === 201) acknowledged.set(String(/"id":(\d+)/.exec(text)?.[1]), name)
      } catch (error) {
        answer = { at: Date.now(), origin, status: 0, problem: String((error as Error).cause ?? error) }
      }
      answers.push(answer)
      if (answer.status !== 200 && answer.status !== 201) await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  const loops = Promise.all(Array.from({ length: 8 }, (_, l) => loop(l)))
  return {
    answers,
    acknowledged,
    stop: async () => {
      running = false
      await loops
    },
  }
}

// What is wrong with an answer, if anything: only 200, 201 and a JSON 503 with Retry-After may come.
function check(response: Response, text: string): string | undefined {
  if (response.status === 200 || response.status === 201) return undefined
  if (response.status !== 503) return `status ${response.status}: ${text}`
  if (!response.headers.get('retry-after')) return '503 without Retry-After'
  if (!/"code":"service_unavailable"/.test(text)) return `503 body ${text}`
  return undefined
}

describe('database faults under load', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  after(killLeftovers)

  for (const via of ['direct', 'pgbouncer'] as const) {
    describe(`PostgreSQL ${via === 'direct' ? 'direct' : 'through deploy/pgbouncer.ini'}`, () => {
      let postgres: PostgresServer
      let pooler: PgBouncer | undefined
      let database: { url: string; drop: () => Promise<void> }
      /** Runs `work` on a new connection straight to PostgreSQL, as its superuser, in the test's database. */
      const asAdmin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
        const client = new pg.Client({ connectionString: new URL(new URL(database.url).pathname, postgres.url).href })
        await client.connect()
        try {
          return await work(client)
        } finally {
          await client.end()
        }
      }
      const servers: ServeProcess[] = []
      const exits: string[] = []

      before(async () => {
        postgres = await startPostgres()
        pooler = via === 'pgbouncer' ? await startPgBouncer(postgres.url) : undefined
        database = await createDatabase(postgres.url, pooler?.url)
        for (const workers of ['1', '2']) {
          const env = cliEnv({ DATABASE_URL: database.url, API_KEYS: API_KEY, WORKERS: workers, LOG_LEVEL: 'warn' })
          const server = await startServe(env)
          server.exited.then((exit) => exits.push(`WORKERS=${workers} exited: ${JSON.stringify(exit)}`))
          servers.push(server)
        }
      })
      after(async () => {
        for (const server of servers) await server.stop()
        await pooler?.destroy()
        await postgres?.destroy()
      })

      /**
       * Runs `fault` under load, then asserts what every fault must leave. `fault` resolves to when
       * PostgreSQL accepted connections again (ms since the epoch), or undefined if it never stopped.
       */
      async function underLoad(fault: () => Promise<number | undefined>, t: { diagnostic(message: string): void }) {
        const traffic = load(servers.map((server) => server.origin))
        const waitFor = async (condition: () => boolean, ms: number) => {
          for (const stopAt = Date.now() + ms; !condition() && Date.now() < stopAt; ) await new Promise((r) => setTimeout(r, 10))
        }
        let back: number | undefined
        try {
          await waitFor(() => traffic.acknowledged.size >= 40, 10_000)
          assert.ok(traffic.acknowledged.size >= 40, 'creates flow before the fault')
          back = await fault()
          const since = back ?? Date.now()
          // Every process answers a create again, and the load goes on a little longer.
          await waitFor(
            () => servers.every((s) => traffic.answers.some((a) => a.origin === s.origin && a.status === 201 && a.at > since)),
            15_000,
          )
          const until = traffic.answers.length + 40
          await waitFor(() => traffic.answers.length >= until, 15_000)
        } finally {
          await traffic.stop()
        }

        const statuses = Object.fromEntries(
          [...new Set(traffic.answers.map((a) => a.status))].map((s) => [
            s,
            traffic.answers.filter((a) => a.status === s).length,
          ]),
        )
        t.diagnostic(`answers: ${JSON.stringify(statuses)}`)
        assert.deepEqual(exits, [], 'no serve process exited')
        for (const server of servers) assert.doesNotMatch(server.stdout(), /worker exited|unexpected error/, 'no worker exited')
        assert.deepEqual(
          traffic.answers.filter((a) => a.problem !== undefined).slice(0, 5),
          [],
          'only 200, 201 and JSON 503 with Retry-After',
        )
        if (back !== undefined) {
          const recovery = Math.max(
            ...servers.map(
              (s) =>
                (traffic.answers.find((a) => a.origin === s.origin && a.status === 201 && a.at > back)?.at ?? Infinity) - back,
            ),
          )
          t.diagnostic(`a create succeeded on every process ${recovery} ms after PostgreSQL accepted connections`)
          assert.ok(recovery <= RECOVERY_MS[via], `recovered in ${recovery} ms, more than ${RECOVERY_MS[via]}`)
        }
        const ids = [...traffic.acknowledged.keys()]
        const stored = await asAdmin((client) =>
          client.query<{ id: string; name: string }>('select id::text, name from pets where id = any($1::bigint[])', [ids]),
        )
        const byId = new Map(stored.rows.map((row) => [row.id, row.name]))
        const lost = [...traffic.acknowledged].filter(([id, name]) => byId.get(id) !== name)
        assert.deepEqual(lost, [], `every one of ${ids.length} acknowledged creates is stored`)
      }

      it('starts while PostgreSQL is down: alive, not ready, 503 with Retry-After, then serves', async (t) => {
        await postgres.stop()
        const ports = [await freePort(), await freePort()]
        const starting = ['1', '2'].map((workers, i) =>
          startServe(cliEnv({ DATABASE_URL: database.url, API_KEYS: API_KEY, WORKERS: workers, PORT: String(ports[i]) }), 30_000),
        )
        try {
          for (const port of ports) {
            const origin = `http://127.0.0.1:${port}`
            let health = 0
            for (const stopAt = Date.now() + 10_000; health !== 200 && Date.now() < stopAt; ) {
              health = await fetch(`${origin}/healthz`).then(
                (r) => r.status,
                () => 0,
              )
            }
            assert.equal(health, 200, 'the waiting process is alive')
            assert.equal((await fetch(`${origin}/readyz`)).status, 503, 'and not ready')
            const list = await fetch(`${origin}/v1/pets`, { headers: { authorization: `Bearer ${API_KEY}` } })
            assert.equal(list.status, 503)
            assert.equal(list.headers.get('retry-after'), '2')
            assert.equal(((await list.json()) as { code: string }).code, 'service_unavailable')
          }
        } finally {
          await postgres.start()
        }
        const back = Date.now()
        for (const server of await Promise.all(starting)) {
          t.diagnostic(`listening ${Date.now() - back} ms after PostgreSQL accepted connections`)
          const created = await fetch(`${server.origin}/v1/pets`, {
            method: 'POST',
            headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
            body: '{"name":"after the wait","categoryId":1}',
          })
          assert.equal(created.status, 201)
          assert.match(server.stdout(), /the database is unavailable; starting once it answers/)
          await server.stop()
        }
      })

      it('keeps serving when backends are terminated while idle in transaction', async (t) => {
        await underLoad(async () => {
          let terminated = 0
          await asAdmin(async (client) => {
            for (const stopAt = Date.now() + 15_000; terminated < 5 && Date.now() < stopAt; ) {
              const { rows } = await client.query(
                // offset 0 keeps the filter apart from the call: this connection is never a victim.
                `select pg_terminate_backend(pid) from (
                   select pid from pg_stat_activity
                    where datname = current_database() and pid <> pg_backend_pid() and state = 'idle in transaction'
                   offset 0) as idle`,
              )
              terminated += rows.length
            }
          })
          t.diagnostic(`terminated ${terminated} backends idle in transaction`)
          assert.ok(terminated >= 5, 'backends idle in transaction were terminated')
          return undefined
        }, t)
      })

      it('keeps serving when PostgreSQL is SIGKILLed and restarted', async (t) => {
        await underLoad(async () => {
          await postgres.kill()
          await postgres.start()
          return Date.now()
        }, t)
      })

      it('keeps serving while PostgreSQL is stopped for 10 s', async (t) => {
        await underLoad(async () => {
          await postgres.stop()
          await new Promise((resolve) => setTimeout(resolve, 10_000))
          await postgres.start()
          return Date.now()
        }, t)
      })
    })
  }
})

describe('nginx → two instances → PgBouncer → PostgreSQL stopped 10 s', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  after(killLeftovers)

  it('commits no create its client saw fail (but for one its Idempotency-Key retry returned), answers within nginx’s timeout', async (t) => {
    const postgres = await startPostgres()
    const pooler = await startPgBouncer(postgres.url)
    const servers: ServeProcess[] = []
    let nginx: Nginx | undefined
    try {
      const database = await createDatabase(postgres.url, pooler.url)
      const env = cliEnv({ DATABASE_URL: database.url, API_KEYS: API_KEY, LOG_LEVEL: 'warn' })
      for (let i = 0; i < 2; i++) servers.push(await startServe(env))
      nginx = await startShippedNginx(servers.map((server) => server.port) as [number, number])
      const origin = nginx.origin

      const acknowledged = new Set<string>()
      const failed = new Set<string>()
      const statuses = new Map<number, number>()
      let slowest = 0
      let running = true
      // One create, timed; a network error is status 0.
      const create = async (name: string, key: string | undefined) => {
        const headers: Record<string, string> = { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' }
        if (key) headers['idempotency-key'] = key
        const started = Date.now()
        const status = await fetch(`${origin}/v1/pets`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ name, categoryId: 1 }),
        })
          .then(async (response) => {
            await response.arrayBuffer()
            return response.status
          })
          .catch(() => 0)
        slowest = Math.max(slowest, Date.now() - started)
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
        return status
      }
      const loop = async (l: number) => {
        for (let i = 0; running; i++) {
          const name = `e2e ${l}-${i}`
          // Half the loops send plain creates, half idempotent ones (which retry through the outage).
          const key = l % 2 === 0 ? randomUUID() : undefined
          let status = await create(name, key)
          // The client's retry of an idempotent create: the same key and body until it is answered.
          for (const stopAt = Date.now() + 60_000; key && status !== 201 && Date.now() < stopAt; ) {
            await new Promise((resolve) => setTimeout(resolve, 250))
            status = await create(name, key)
          }
          if (status === 201) acknowledged.add(name)
          else {
            failed.add(name)
            await new Promise((resolve) => setTimeout(resolve, 20)) // pacing after a failure
          }
        }
      }
      const loops = Promise.all(Array.from({ length: 8 }, (_, l) => loop(l)))
      try {
        const waitFor = async (condition: () => boolean, what: string) => {
          for (const stopAt = Date.now() + 30_000; !condition(); await new Promise((r) => setTimeout(r, 10))) {
            assert.ok(Date.now() < stopAt, what)
          }
        }
        await waitFor(() => acknowledged.size >= 40, 'creates flow before the outage')
        await postgres.stop()
        await new Promise((resolve) => setTimeout(resolve, 10_000))
        await postgres.start()
        const after = acknowledged.size
        await waitFor(() => acknowledged.size >= after + 40, 'creates succeed again')
      } finally {
        running = false
        await loops
      }

      t.diagnostic(
        `statuses ${JSON.stringify(Object.fromEntries(statuses))}; ${acknowledged.size} acknowledged, ${failed.size} failed; slowest answer ${slowest} ms`,
      )
      assert.deepEqual(
        [...statuses.keys()].filter((status) => status !== 201 && status !== 503),
        [],
        'only 201 and 503',
      )
      assert.ok(failed.size > 0, 'the outage failed some creates without a key')
      const proxyReadTimeoutMs = Number(/proxy_read_timeout (\d+)s;/.exec(CONF)?.[1]) * 1000
      assert.ok(slowest < proxyReadTimeoutMs, `every answer came from the service, before nginx's ${proxyReadTimeoutMs} ms`)
      const client = new pg.Client({ connectionString: new URL(new URL(database.url).pathname, postgres.url).href })
      await client.connect()
      try {
        const { rows } = await client.query<{ name: string }>('select name from pets where name like $1', ['e2e %'])
        const stored = new Set(rows.map((row) => row.name))
        assert.deepEqual(
          [...failed].filter((name) => stored.has(name)),
          [],
          'no create its client saw fail was committed',
        )
        assert.deepEqual(
          [...acknowledged].filter((name) => !stored.has(name)),
          [],
          'every acknowledged create is stored',
        )
        assert.equal(stored.size, acknowledged.size, 'nothing else was committed (no duplicate from a retry)')
      } finally {
        await client.end()
      }
    } finally {
      await nginx?.stop()
      for (const server of servers) await server.stop()
      await pooler.destroy()
      await postgres.destroy()
    }
  })
})
