// The rate-limit store's client (src/store/rate-limit-store.ts over resp-connection.ts) in this
// process: leases from a real redis-server, and from a hostile store every reply it must refuse: out
// of bounds (a failure, the connection kept), or not the three small integers it reads (the connection
// dropped at once, a few KB held at most), or none (dropped after STORE_TIMEOUT_MS).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { inspect } from 'node:util'
import { type RedisServer, startRedisServer } from '../../scripts/lib/redis-server.js'
import {
  inClearOverNetwork,
  openRateLimitStore,
  type RateLimitStore,
  STORE_TIMEOUT_MS,
} from '../../src/store/rate-limit-store.js'
import { MAX_REPLY_BYTES } from '../../src/store/resp-connection.js'
import { type HostileMode, type HostileStore, startHostileStore } from '../support/hostile-store.js'

const WINDOW_MS = 60_000
/** The real store's password: characters a URL must percent-encode. */
const PASSWORD = 'pa%ss:w/rd@1'

/** A store client on `url`, with what it reported, resolved once it is connected (within 2 s). */
async function openStore(url: string): Promise<{ store: RateLimitStore; lost: Error[]; connections: () => number }> {
  const lost: Error[] = []
  let connections = 0
  let connected = () => {}
  const ready = new Promise<void>((resolve) => {
    connected = resolve
  })
  const store = openRateLimitStore(url, {
    connected() {
      connections++
      connected()
    },
    lost: (error) => lost.push(error),
  })
  await Promise.race([ready, new Promise((_, reject) => setTimeout(() => reject(new Error('not connected in 2 s')), 2_000))])
  return { store, lost, connections: () => connections }
}

/** Resolves once `condition()` holds, checking every 10 ms; rejects after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  for (const stopAt = Date.now() + ms; !condition(); await new Promise((resolve) => setTimeout(resolve, 10))) {
    if (Date.now() > stopAt) throw new Error(`${what}: not within ${ms} ms`)
  }
}

describe('the rate-limit store client (RATE_LIMIT_STORE_URL)', () => {
  it('takes redis:// to a host that is not loopback as crossing a network in clear, and nothing else', () => {
    const inClear = [
      'redis://cache:6379',
      'redis://:pw@10.0.0.5:6379/1',
      'redis://[2001:db8::1]:6379',
      'redis://localhost.example',
    ]
    const notInClear = [
      'rediss://cache:6380',
      'redis://127.0.0.1:6379',
      'redis://:pw@127.8.9.10',
      'redis://localhost:6379',
      'redis://LOCALHOST',
      'redis://[::1]:6379',
      'redis://[::ffff:127.0.0.1]:6379',
    ]
    assert.deepEqual(inClear.filter(inClearOverNetwork), inClear)
    assert.deepEqual(notInClear.filter(inClearOverNetwork), [])
  })

  describe('with a real redis-server', () => {
    let redis: RedisServer
    before(async () => {
      redis = await startRedisServer({ password: PASSWORD })
    })
    after(() => redis?.destroy())
    const url = () => redis.url.replace('redis://', `redis://:${encodeURIComponent(PASSWORD)}@`)

    it('authenticates, selects the database, leases within the limit, the total leased capped at the limit when another process leased under a higher one', async () => {
      const { store } = await openStore(`${url()}/3`)
      try {
        const client = `test:${Date.now()}`
        assert.deepEqual(
          [await store.lease(client, 10, 4, WINDOW_MS), await store.lease(client, 10, 4, WINDOW_MS)].map((each) => [
            each.granted,
            each.leased,
          ]),
          [
            [1, 1],
            [1, 2],
          ],
        )
        // A higher limit elsewhere (a key whose limit is being lowered across a rolling restart): 40 leased of 50.
        for (let leased = 2; leased < 40; leased += (await store.lease(client, 50, 8, WINDOW_MS)).granted);
        const lowered = await store.lease(client, 10, 4, WINDOW_MS)
        assert.deepEqual([lowered.granted, lowered.leased], [0, 10])
        assert.ok(lowered.resetMs > 0 && lowered.resetMs <= WINDOW_MS, `resetMs ${lowered.resetMs}`)
        assert.equal(await redis.command('DBSIZE'), ':0', 'the counters are in database 3, not 0')
      } finally {
        await store.close()
      }
    })

    it('reports a wrong password without it: the error holds no command and no argument', async () => {
      const password = 'wrong-Pa55word-9f3c'
      const lost: Error[] = []
      const store = openRateLimitStore(redis.url.replace('redis://', `redis://:${password}@`), {
        connected: () => assert.fail('connected with a wrong password'),
        lost: (error) => lost.push(error),
      })
      try {
        await until(() => lost.length > 0, 2_000, 'a refusal')
        assert.match(String(lost[0]?.message), /WRONGPASS/)
        for (const error of lost) {
          const everything = `${inspect(error, { depth: null, showHidden: true })} ${JSON.stringify(error)}`
          assert.ok(!everything.includes(password), everything)
        }
        await assert.rejects(store.lease('k', 10, 1, WINDOW_MS), /not connected/)
      } finally {
        await store.close()
      }
    })
  })

  describe('with a hostile store', () => {
    let hostile: HostileStore
    before(async () => {
      hostile = await startHostileStore()
    })
    after(() => hostile?.close())

    const outOfBounds: Array<[string, string]> = [
      ['a spent lease whose window ends in 31 years', '*3\r\n:0\r\n:0\r\n:1000000000000\r\n'],
      ['more granted than asked for', '*3\r\n:5\r\n:5\r\n:1000\r\n'],
      ['a negative grant', '*3\r\n:-1\r\n:0\r\n:1000\r\n'],
      ['more leased than the limit', '*3\r\n:1\r\n:11\r\n:1000\r\n'],
      ['a negative total', '*3\r\n:1\r\n:-1\r\n:1000\r\n'],
      ['a window that has ended', '*3\r\n:1\r\n:1\r\n:0\r\n'],
      ['a window longer than the window', '*3\r\n:1\r\n:1\r\n:60001\r\n'],
      ['two integers', '*2\r\n:1\r\n:1\r\n'],
      ['no integer', '*0\r\n'],
      ['a status line', '+OK\r\n'],
    ]
    for (const [what, raw] of outOfBounds) {
      it(`refuses ${what} as a store failure, and keeps the connection`, async () => {
        hostile.setMode({ raw })
        const { store, lost, connections } = await openStore(hostile.url)
        try {
          await assert.rejects(store.lease('k', 10, 4, WINDOW_MS), /the store answered a lease out of bounds/)
          assert.equal(hostile.droppedByClient(), 0)
          hostile.setMode('ok')
          await until(() => connections() >= 2 && store.connected, 2_000, 'reconnected')
          assert.deepEqual(await store.lease('k', 10, 4, WINDOW_MS), { granted: 1, leased: 1, resetMs: 30_000 })
          assert.ok(
            lost.every((error) => /closed by the store/.test(error.message)),
            String(lost),
          )
        } finally {
          await store.close()
        }
      })
    }

    const unread: Array<[string, HostileMode | { raw: string }, RegExp]> = [
      ['an array header of 2^25 - 1 elements (11 bytes)', 'arrayheader', /an array longer than expected/],
      ['an array of 30,000,000 integers', 'bigarray', /an array longer than expected/],
      ['a 200 MB blob', 'bigblob', /a reply of type "\$"/],
      ['a type byte no reply has', 'garbage', /a reply of type "H"/],
      ['nested arrays', { raw: `${'*1\r\n'.repeat(100_000)}:1\r\n` }, /an array item that is not an integer/],
      ['a bare integer', { raw: ':1\r\n' }, /a reply of type ":"/],
      ['an integer past 2^53', { raw: '*3\r\n:1\r\n:1\r\n:90071992547409930\r\n' }, /an integer out of range/],
      ['a line not ended by CRLF', { raw: '*3\r\n:1\n:1\r\n:1\r\n' }, /an integer out of range|not ended by CRLF/],
      ['an error line longer than a reply may be', { raw: `-ERR ${'x'.repeat(MAX_REPLY_BYTES)}\r\n` }, /longer than 4096 bytes/],
      ['a status line that never ends', { raw: `+${'x'.repeat(100_000)}` }, /longer than 4096 bytes/],
    ]
    for (const [what, mode, reason] of unread) {
      it(`drops the connection at once on ${what}, then leases again once the store answers sanely`, async () => {
        hostile.setMode(mode)
        const { store, lost, connections } = await openStore(hostile.url)
        try {
          const started = Date.now()
          await assert.rejects(store.lease('k', 10, 4, WINDOW_MS), reason)
          assert.ok(Date.now() - started < STORE_TIMEOUT_MS, `refused after ${Date.now() - started} ms`)
          await until(() => hostile.droppedByClient() === 1, 1_000, 'the client closed the connection')
          assert.match(String(lost[0]?.message), /connection dropped/)
          hostile.setMode('ok')
          await until(() => connections() >= 2 && store.connected, 2_000, 'reconnected')
          assert.deepEqual(await store.lease('k', 10, 4, WINDOW_MS), { granted: 1, leased: 1, resetMs: 30_000 })
        } finally {
          await store.close()
        }
      })
    }

    it('drops the connection when a lease gets no reply within STORE_TIMEOUT_MS, so a half-read reply never stays', async () => {
      hostile.setMode('hang')
      const { store, connections } = await openStore(hostile.url)
      try {
        const started = Date.now()
        const waits = [store.lease('a', 10, 4, WINDOW_MS), store.lease('b', 10, 4, WINDOW_MS)]
        for (const waiting of waits) await assert.rejects(waiting, /no reply within 250 ms; connection dropped/)
        const took = Date.now() - started
        assert.ok(took >= STORE_TIMEOUT_MS && took < STORE_TIMEOUT_MS + 200, `${took} ms`)
        await until(() => hostile.droppedByClient() === 1, 1_000, 'the client closed the connection')
        hostile.setMode({ raw: '*3\r\n:1\r\n:1\r\n:5000\r\n' })
        await until(() => connections() >= 2 && store.connected, 2_000, 'reconnected')
        assert.deepEqual(await store.lease('a', 10, 4, WINDOW_MS), { granted: 1, leased: 1, resetMs: 5_000 })
      } finally {
        await store.close()
      }
    })

    it('drops the connection on a reply nobody asked for', async () => {
      hostile.setMode('ok')
      const { store, lost } = await openStore(hostile.url)
      try {
        hostile.push('*3\r\n:1\r\n:1\r\n:1000\r\n')
        await until(() => lost.length > 0, 1_000, 'dropped')
        assert.match(String(lost[0]?.message), /a reply to no command/)
        assert.equal(store.connected, false)
      } finally {
        await store.close()
      }
    })
  })
})
