// TRUST_PROXY: behind a listed proxy, the client named by X-Forwarded-For is the one the auth-failure
// limit counts and the log line names; without it, X-Forwarded-For is ignored, so it cannot be used
// to dodge the limit.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'

const BUDGET = 3

/** Sends `count` requests without a key as if forwarded for `client`; their statuses. */
async function failAs(server: TestServer, client: string, count: number): Promise<number[]> {
  const statuses: number[] = []
  for (let i = 0; i < count; i++) {
    statuses.push((await call(server, 'GET', '/v1/pets', { key: null, headers: { 'x-forwarded-for': client } })).status)
  }
  return statuses
}

const clientsLogged = (server: TestServer) =>
  server.logs
    .map((line) => JSON.parse(line))
    .filter((line) => line.msg === 'request')
    .map((line) => line.client)

describe('TRUST_PROXY=127.0.0.1 (a balancer on the same host)', () => {
  let server: TestServer
  before(async () => {
    server = await startServer({ authFailuresPerMinute: BUDGET, trustProxy: ['127.0.0.1'] })
  })
  after(() => server.close())

  it('takes a forwarded value that is not an IP address for the proxy itself: one budget, logged as the proxy', async () => {
    const values = ['not-an-ip', 'a"b\\c', 'x'.repeat(8000), '203.0.113.300']
    const statuses: number[] = []
    for (const value of values) statuses.push(...(await failAs(server, value, 1)))
    assert.deepEqual(statuses, [401, 401, 401, 429], "the four share the proxy's budget")
    const logged = clientsLogged(server).slice(-values.length)
    assert.deepEqual(logged, Array(values.length).fill('127.0.0.1'))
  })

  it('gives each X-Forwarded-For client its own auth-failure budget, and logs that client', async () => {
    assert.deepEqual(await failAs(server, '203.0.113.1', BUDGET + 1), [401, 401, 401, 429])
    assert.deepEqual(await failAs(server, '203.0.113.2', 1), [401], 'another client behind the proxy still gets its 401')
    // The right-most address the proxy did not vouch for is the client: a forged left-most entry is not.
    assert.deepEqual(await failAs(server, '198.51.100.9, 203.0.113.1', 1), [429])
    const logged = clientsLogged(server)
    assert.ok(logged.includes('203.0.113.1') && logged.includes('203.0.113.2'), `logged clients: ${logged}`)
    assert.ok(!logged.includes('198.51.100.9'))
    assert.equal((await call(server, 'GET', '/v1/pets?limit=1')).status, 200, 'a valid key is never counted')
  })
})

describe('without TRUST_PROXY', () => {
  let server: TestServer
  before(async () => {
    server = await startServer({ authFailuresPerMinute: BUDGET })
  })
  after(() => server.close())

  it('ignores X-Forwarded-For: every client of the connection shares its address budget and is logged by it', async () => {
    assert.deepEqual(await failAs(server, '203.0.113.1', BUDGET), [401, 401, 401])
    assert.deepEqual(await failAs(server, '203.0.113.2', 1), [429], 'a made-up X-Forwarded-For does not dodge the limit')
    assert.deepEqual([...new Set(clientsLogged(server))], ['127.0.0.1'])
  })
})
