// Read replicas for real (docs/deploying.md, "Read replicas"): a PostgreSQL primary and a streaming
// replica of it (scripts/lib/postgres-replica.ts), and two `serve` instances with DATABASE_REPLICA_URLS,
// one straight to both servers, the other (WORKERS=2) through a PgBouncer in front of each. A create's
// Consistency-Token makes every read include it, on either instance, while the replica lags; a read
// without one is served by the replica only within REPLICA_MAX_LAG_MS; a replica that lags past it,
// dies or is promoted gets no reads within 2 s, with no 5xx, and gets reads again once back.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { createClient } from '../../clients/typescript/src/index.js'
import { type PgBouncer, startPgBouncer } from '../../scripts/lib/pgbouncer.js'
import { type PostgresReplica, startReplica } from '../../scripts/lib/postgres-replica.js'
import { createDatabase, type PostgresServer, startPostgres } from '../../scripts/lib/postgres-server.js'
import { startServer, TEST_DATABASES } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, startServe } from '../support/cli-process.js'

const API_KEY = 'replica-test-key-0123456789abcdefghij'
/** REPLICA_MAX_LAG_MS of the instances: its minimum, so the lag cases take a second, not two. */
const MAX_LAG_MS = 1000
/** REPLICA_WAIT_MS of the instance straight to the servers, and of the one through PgBouncer. */
const WAIT_MS = { direct: 50, pooled: 1000 }
/** How soon a replica that lags past the bound, dies or is promoted must get no more reads. */
const OUT_WITHIN_MS = 2000
/** Creates, each followed by a read, in the read-your-writes figures. */
const N = 25

const headers = (token?: string) => ({
  authorization: `Bearer ${API_KEY}`,
  'content-type': 'application/json',
  ...(token ? { 'consistency-token': token } : {}),
})

async function create(
  server: ServeProcess,
  name: string,
  status = 'available',
): Promise<{ id: string; token: string | null; status: number }> {
  const response = await fetch(`${server.origin}/v1/pets`, {
    method: 'POST',
    headers: headers(),
    body: JSON.stringify({ name, categoryId: 7, status }),
  })
  const text = await response.text()
  assert.equal(response.status, 201, text)
  return { id: /"id":(\d+)/.exec(text)?.[1] ?? '', token: response.headers.get('consistency-token'), status: response.status }
}

/** getPet's status on `server`, sending `token` when given. */
async function readStatus(server: ServeProcess, id: string, token?: string): Promise<number> {
  const response = await fetch(`${server.origin}/v1/pets/${id}`, { headers: headers(token) })
  await response.arrayBuffer()
  return response.status
}

/** The samples of metric `name` on `server`, by their `label` value. */
async function metricBy(server: ServeProcess, name: string, label: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${server.metricsOrigin}/metrics`, { signal: AbortSignal.timeout(5_000) })).text()
  const samples = new Map<string, number>()
  for (const [, value = '', sample = ''] of text.matchAll(new RegExp(`^${name}\\{${label}="([^"]+)"\\} (\\S+)$`, 'gm')))
    samples.set(value, Number(sample))
  return samples
}

const replicaReads = async (server: ServeProcess) =>
  (await metricBy(server, 'animal_store_database_reads_total', 'target')).get('replica-1') ?? 0

/** Reads (getPet and listPets, both instances) from `loops` concurrent loops until stopped; every status and when it came. */
function readContinuously(servers: ServeProcess[], ids: string[], loops = 6) {
  let stopped = false
  const answers: Array<{ at: number; status: number }> = []
  const loop = async (l: number) => {
    for (let i = 0; !stopped; i++) {
      const server = servers[(l + i) % servers.length] as ServeProcess
      const path = i % 2 ? `/v1/pets/${ids[i % ids.length]}` : '/v1/pets?limit=5'
      const response = await fetch(`${server.origin}${path}`, { headers: headers() })
      await response.arrayBuffer()
      answers.push({ at: Date.now(), status: response.status })
    }
  }
  const running = Promise.all(Array.from({ length: loops }, (_, l) => loop(l)))
  return {
    answers,
    stop: async () => {
      stopped = true
      await running
      return answers
    },
  }
}

/** Polls `probe` every 50 ms until it is true; resolves with the ms it took; fails after `ms`. */
async function until(probe: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const start = Date.now()
  while (!(await probe())) {
    if (Date.now() - start > ms) assert.fail(`${what}: not within ${ms} ms`)
    await delay(50)
  }
  return Date.now() - start
}

describe('read replicas: a primary, a streaming replica and two instances (one through PgBouncer, with two workers)', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  let primary: PostgresServer
  let replica: PostgresReplica
  const poolers: PgBouncer[] = []
  let direct: ServeProcess
  let pooled: ServeProcess
  const seeded: string[] = []

  before(async () => {
    assertBuilt()
    primary = await startPostgres()
    replica = await startReplica(primary)
    const { url } = await createDatabase(primary.url)
    const name = new URL(url).pathname
    const onReplica = new URL(replica.url)
    onReplica.pathname = name
    await replica.caughtUp()
    poolers.push(await startPgBouncer(primary.url), await startPgBouncer(replica.url))
    const viaPooler = (pooler: PgBouncer) => Object.assign(new URL(pooler.url), { pathname: name }).href
    const env = (database: string, replicas: string, waitMs: number) =>
      cliEnv({
        DATABASE_URL: database,
        DATABASE_REPLICA_URLS: replicas,
        REPLICA_MAX_LAG_MS: String(MAX_LAG_MS),
        REPLICA_WAIT_MS: String(waitMs),
        API_KEYS: API_KEY,
        RATE_LIMIT_PER_MINUTE: '0',
        LOG_LEVEL: 'info',
      })
    direct = await startServe(env(url, onReplica.href, WAIT_MS.direct))
    // With two workers: its metrics are the primary's sums (reads) and worst views (lag, rotation).
    pooled = await startServe({
      ...env(viaPooler(poolers[0] as PgBouncer), viaPooler(poolers[1] as PgBouncer), WAIT_MS.pooled),
      WORKERS: '2',
    })
    for (let i = 0; i < 20; i++) seeded.push((await create(direct, `seeded ${i}`)).id)
    await replica.caughtUp()
    // Both instances have seen the replica current (their checks run every 250 ms).
    for (const server of [direct, pooled])
      await until(
        async () => (await metricBy(server, 'animal_store_replica_serving', 'replica')).get('replica-1') === 1,
        5000,
        'replica in rotation',
      )
  })
  after(async () => {
    await Promise.all([direct?.stop(), pooled?.stop()])
    killLeftovers()
    for (const pooler of poolers) await pooler.destroy()
    await replica?.destroy()
    await primary?.destroy()
  })

  it('serves the replica most reads while it is current, and sends no 5xx', async () => {
    // Both servers' database reads in all, and the replica's. A getPet of a pet an instance has read
    // already reads no database (pet-cache.ts), so gets are mostly pages here; the token test below
    // reads pets not read before.
    const reads = async () => {
      const counts = await Promise.all(
        [direct, pooled].map((server) => metricBy(server, 'animal_store_database_reads_total', 'target')),
      )
      return {
        all: counts.reduce((sum, count) => sum + [...count.values()].reduce((a, b) => a + b, 0), 0),
        replica: counts.reduce((sum, count) => sum + (count.get('replica-1') ?? 0), 0),
      }
    }
    const before = await reads()
    const reading = readContinuously([direct, pooled], seeded)
    await delay(1000)
    const answers = await reading.stop()
    assert.deepEqual([...new Set(answers.map((answer) => answer.status))], [200])
    const after = await reads()
    const [all, served] = [after.all - before.all, after.replica - before.replica]
    assert.ok(served >= all * 0.9, `the replica served ${served} of ${all} database reads`)
  })

  it('a read with the token of a create includes it on both instances while the replica has not replayed it; without, it may not', async (t) => {
    const stale = { withToken: 0, otherInstance: 0, withoutToken: 0 }
    const fallbacks = async (server: ServeProcess) =>
      (await metricBy(server, 'animal_store_replica_fallbacks_total', 'reason')).get('wait') ?? 0
    const before = { direct: await fallbacks(direct), pooled: await fallbacks(pooled), replicaReads: await replicaReads(pooled) }
    for (let i = 0; i < N; i++) {
      // The replica stops just before each create: behind it, within the bound.
      await replica.pauseReplay()
      try {
        const { id, token } = await create(direct, `paused ${i}`)
        assert.match(token ?? '', /^[0-9A-F]{16}\.[A-Za-z0-9_-]{22}$/)
        if ((await readStatus(direct, id)) === 404) stale.withoutToken++
        // `direct` waits REPLICA_WAIT_MS (50 ms) for the replica, then reads from the primary.
        if ((await readStatus(direct, id, token ?? undefined)) !== 200) stale.withToken++
        // `pooled` waits up to 1 s: replay resumes meanwhile, and the replica serves it once it has the create.
        const onOther = readStatus(pooled, id, token ?? undefined)
        await delay(20)
        await replica.resumeReplay()
        if ((await onOther) !== 200) stale.otherInstance++
      } finally {
        await replica.resumeReplay()
      }
      await replica.caughtUp()
    }
    t.diagnostic(
      `stale reads of a client's own create, the replica behind it: with its token ${stale.withToken} of ${N} (and ${stale.otherInstance} on the other instance, through PgBouncer); without it ${stale.withoutToken} of ${N}`,
    )
    assert.deepEqual([stale.withToken, stale.otherInstance], [0, 0])
    assert.ok(stale.withoutToken > 0, 'a read without the token was served by the lagging replica')
    assert.equal((await fallbacks(direct)) - before.direct, N, 'each token read on `direct` went to the primary after its wait')
    assert.equal((await fallbacks(pooled)) - before.pooled, 0, 'no token read on `pooled` outwaited the replica')
    assert.equal(
      (await replicaReads(pooled)) - before.replicaReads,
      N,
      'the replica served each, once it had replayed the create',
    )
  })

  it('the TypeScript client reads its own creates with no help, creating on one instance and reading on the other', async (t) => {
    // Creates go to `direct`, reads to `pooled`: as a balancer might send them.
    const client = createClient({
      baseUrl: `${direct.origin}/v1`,
      apiKey: API_KEY,
      fetch: (input, init) => {
        const request = new Request(input, init)
        const target = request.method === 'GET' ? request.url.replace(direct.origin, pooled.origin) : request.url
        return fetch(new Request(target, request))
      },
    })
    await replica.pauseReplay()
    try {
      let stale = 0
      for (let i = 0; i < N; i++) {
        const pet = await client.createPet({ name: `client ${i}`, categoryId: 7n })
        const page = await client.listPets({ limit: 1, cursor: undefined, status: undefined })
        assert.ok(page.pets.length === 1)
        const read = await client.getPet(pet.id).catch(() => undefined)
        if (read?.id !== pet.id) stale++
      }
      t.diagnostic(`the client, replay paused: ${stale} stale reads of its own ${N} creates`)
      assert.equal(stale, 0)
    } finally {
      await replica.resumeReplay()
      await replica.caughtUp()
    }
  })

  it('the TypeScript client drops a token the service refuses (its database replaced) and reads again without it', async () => {
    const replaced = await startServer({ apiKeys: [API_KEY] })
    try {
      let target = direct.origin
      const sent: Array<string | null> = []
      const client = createClient({
        baseUrl: `${direct.origin}/v1`,
        apiKey: API_KEY,
        fetch: (input, init) => {
          const request = new Request(input, init)
          if (request.method === 'GET') sent.push(request.headers.get('consistency-token'))
          return fetch(new Request(request.url.replace(direct.origin, target), request))
        },
      })
      await client.createPet({ name: 'before the move', categoryId: 7n })
      target = replaced.origin
      assert.deepEqual(await client.listPets(), { pets: [], nextCursor: undefined })
      assert.equal(sent.length, 2, 'refused once, then sent again')
      assert.match(sent[0] ?? '', /^[0-9A-F]{16}\./)
      assert.equal(sent[1], null)
      await client.listPets()
      assert.equal(sent[2], null, 'and not sent since')
    } finally {
      await replaced.close()
    }
  })

  it('reads a next page where the page that linked to it was read, so paging never goes back in time', async () => {
    await replica.pauseReplay()
    try {
      // The only `sold` pets: two pages of one.
      const made = [await create(direct, 'sold 1', 'sold'), await create(direct, 'sold 2', 'sold')]
      // Page 1 with the newest token: read from the primary, and its cursor carries where.
      const first = await fetch(`${direct.origin}/v1/pets?status=sold&limit=1`, { headers: headers(made[1]?.token ?? '') })
      assert.deepEqual(
        ((await first.json()) as Array<{ name: string }>).map((pet) => pet.name),
        ['sold 1'],
      )
      const next = /^<([^>]+)>; rel="next"$/.exec(first.headers.get('link') ?? '')?.[1] ?? ''
      assert.match(new URL(next, direct.origin).searchParams.get('cursor') ?? '', /^[\w-]+\.[\w-]{11}\.[\w-]+$/)
      // Page 2 without any token, on the other instance: not from the replica, which has neither pet.
      const second = await fetch(`${pooled.origin}${next}`, { headers: headers() })
      assert.equal(second.status, 200)
      assert.deepEqual(
        ((await second.json()) as Array<{ name: string }>).map((pet) => pet.name),
        ['sold 2'],
      )
    } finally {
      await replica.resumeReplay()
      await replica.caughtUp()
    }
  })

  it('answers 304 to a page whose rows are unchanged, although its cursor carries a new position', async () => {
    const path = '/v1/pets?limit=2'
    const first = await fetch(`${direct.origin}${path}`, { headers: headers() })
    await first.arrayBuffer()
    await create(direct, 'moves the position')
    await replica.caughtUp()
    const again = await fetch(`${direct.origin}${path}`, {
      headers: { ...headers(), 'if-none-match': first.headers.get('etag') ?? '' },
    })
    assert.equal(again.status, 304)
    const fresh = await fetch(`${direct.origin}${path}`, { headers: headers() })
    await fresh.arrayBuffer()
    assert.notEqual(fresh.headers.get('link'), first.headers.get('link'), 'the cursor moved with the position')
  })

  it('takes a lagging replica out at REPLICA_MAX_LAG_MS: a read without a token is never older, and none fails', async (t) => {
    await until(
      async () => (await metricBy(direct, 'animal_store_replica_serving', 'replica')).get('replica-1') === 1,
      5000,
      'back in rotation',
    )
    await replica.pauseReplay()
    try {
      const { id } = await create(direct, 'lagging')
      const createdAt = Date.now()
      const reads: Array<{ at: number; status: number }> = []
      while (Date.now() - createdAt < MAX_LAG_MS + OUT_WITHIN_MS) {
        reads.push({ at: Date.now() - createdAt, status: await readStatus(direct, id) })
        await delay(10)
      }
      const lastStale = Math.max(...reads.filter((read) => read.status === 404).map((read) => read.at))
      const firstCurrent = Math.min(...reads.filter((read) => read.at > lastStale).map((read) => read.at))
      t.diagnostic(
        `a replica paused at a create: stale reads until ${lastStale} ms after it, current from ${firstCurrent} ms (bound ${MAX_LAG_MS} ms)`,
      )
      assert.ok(
        reads.every((read) => read.status === 200 || read.status === 404),
        JSON.stringify(reads),
      )
      assert.ok(lastStale <= MAX_LAG_MS, `a stale read ${lastStale} ms after the create, past the ${MAX_LAG_MS} ms bound`)
      assert.ok(
        reads.some((read) => read.status === 404),
        'the replica served reads while within the bound',
      )
      const replicaReadsThen = await replicaReads(direct)
      const reading = readContinuously([direct, pooled], seeded)
      await delay(500)
      assert.deepEqual([...new Set((await reading.stop()).map((answer) => answer.status))], [200])
      assert.equal(await replicaReads(direct), replicaReadsThen, 'no read went to the replica while it was behind')
      assert.equal((await metricBy(direct, 'animal_store_replica_serving', 'replica')).get('replica-1'), 0)
      assert.ok(
        ((await metricBy(direct, 'animal_store_replica_lag_seconds', 'replica')).get('replica-1') ?? 0) > MAX_LAG_MS / 1000,
      )
    } finally {
      await replica.resumeReplay()
      await replica.caughtUp()
    }
    const back = await until(
      async () => (await metricBy(direct, 'animal_store_replica_serving', 'replica')).get('replica-1') === 1,
      5000,
      'back in rotation',
    )
    t.diagnostic(`back in rotation ${back} ms after it caught up`)
    assert.match(direct.stdout(), /"msg":"replica serves reads"/)
  })

  it('a replica killed under load: 0 5xx, no reads go to it within 2 s, and it gets reads again once restarted', async (t) => {
    const reading = readContinuously([direct, pooled], seeded)
    await delay(300)
    await replica.kill()
    const out = await Promise.all(
      [direct, pooled].map((server) =>
        until(
          async () => (await metricBy(server, 'animal_store_replica_serving', 'replica')).get('replica-1') === 0,
          OUT_WITHIN_MS,
          'out of rotation',
        ),
      ),
    )
    const counted = await Promise.all([direct, pooled].map(replicaReads))
    await delay(700)
    assert.deepEqual(await Promise.all([direct, pooled].map(replicaReads)), counted, 'no read went to the dead replica')
    const answers = await reading.stop()
    const failed = answers.filter((answer) => answer.status >= 500)
    t.diagnostic(
      `dead replica out of rotation ${out.join(' ms and ')} ms after the kill (direct, through PgBouncer); ${answers.length} reads meanwhile, ${failed.length} 5xx`,
    )
    assert.equal(failed.length, 0)
    assert.deepEqual([...new Set(answers.map((answer) => answer.status))], [200])
    await replica.start()
    await replica.caughtUp()
    await Promise.all(
      [direct, pooled].map((server) =>
        until(
          async () => (await metricBy(server, 'animal_store_replica_serving', 'replica')).get('replica-1') === 1,
          10_000,
          'back in rotation',
        ),
      ),
    )
    const again = await Promise.all([direct, pooled].map(replicaReads))
    const more = readContinuously([direct, pooled], seeded)
    await delay(300)
    assert.deepEqual([...new Set((await more.stop()).map((answer) => answer.status))], [200])
    const later = await Promise.all([direct, pooled].map(replicaReads))
    assert.ok(
      later.every((count, i) => count > (again[i] ?? 0)),
      'both instances read from it again',
    )
    assert.match(direct.stdout(), /"msg":"replica out of the rotation: its reads go to the other replicas or the primary"/)
  })
  it('a promoted replica gets no reads within 2 s, and none fails', async (t) => {
    const reading = readContinuously([direct, pooled], seeded)
    await delay(200)
    await replica.promote()
    const out = await Promise.all(
      [direct, pooled].map((server) =>
        until(
          async () => (await metricBy(server, 'animal_store_replica_serving', 'replica')).get('replica-1') === 0,
          OUT_WITHIN_MS,
          'out of rotation',
        ),
      ),
    )
    const counted = await Promise.all([direct, pooled].map(replicaReads))
    await delay(500)
    const answers = await reading.stop()
    t.diagnostic(
      `promoted replica out of rotation ${out.join(' ms and ')} ms after pg_promote(); ${answers.length} reads, 0 5xx expected`,
    )
    assert.deepEqual([...new Set(answers.map((answer) => answer.status))], [200])
    assert.deepEqual(await Promise.all([direct, pooled].map(replicaReads)), counted)
    assert.match(direct.stdout(), /not in recovery: a primary, or a promoted replica/)
  })
})
