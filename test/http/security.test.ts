// Secrets and internals stay inside (docs/architecture.md, Secrets stay secret; OWASP API8): no key,
// valid or not, ever reaches the log, even at trace level; no error body carries a stack trace, SQL
// or a driver message.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { sql } from 'kysely'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'

const CONFIGURED_KEY = 'configured-secret-key-0123456789abcdef'
const INTERNALS = /\bat [\w.<>]+ \(|\.(ts|js):\d+|\bselect\b|\binsert\b|sqlite|postgres|relation|\bpg\b|stack|errno|ECONN/i

describeEachDatabase('secrets and internals', (database) => {
  let server: TestServer
  const keysUsed: string[] = [CONFIGURED_KEY]
  before(async () => {
    server = await startServer({ database, apiKeys: [CONFIGURED_KEY], logLevel: 'trace', rateLimitPerMinute: 1000 })
    keysUsed.push(server.key)
  })
  after(() => server.close())

  it('never writes a key to the log, whatever the request and outcome', async () => {
    const revoked = await createKey(server.store.apiKeys, 'to revoke')
    await server.store.apiKeys.revokeApiKey(revoked.record.id, new Date().toISOString())
    const wrong = `ask_${'W'.repeat(43)}`
    keysUsed.push(revoked.key, wrong, 'not-a-valid-key-but-secret-1234')
    for (const key of keysUsed) {
      await call(server, 'GET', '/v1/pets', { key })
      await call(server, 'POST', '/v1/pets', { key, body: { name: 'x', categoryId: 1 } })
      await call(server, 'POST', '/v1/pets', { key, body: '{"broken', headers: { 'content-type': 'application/json' } })
      await call(server, 'GET', '/v1/pets/abc', { key })
      await call(server, 'DELETE', '/v1/pets', { key })
      await call(server, 'GET', `/v1/pets?api_key=${key}`, { key })
      await call(server, 'GET', '/v1/pets', { authorization: `Basic ${Buffer.from(`user:${key}`).toString('base64')}` })
      await call(server, 'GET', '/v1/pets', { authorization: `bearer ${key}` })
    }
    await sql`drop table pets`.execute(server.store.db)
    const failed = await call(server, 'GET', '/v1/pets', { key: server.key })
    assert.equal(failed.status, 500)

    assert.ok(server.logs.length > keysUsed.length * 8, 'a line per request was captured')
    for (const key of keysUsed) {
      const leaks = server.logs.filter(
        (line) => line.includes(key) || line.includes(Buffer.from(`user:${key}`).toString('base64')),
      )
      assert.deepEqual(leaks, [], `key ${key.slice(0, 8)}… appears in the log`)
    }
    assert.ok(
      server.logs.some((line) => /no such table|does not exist/.test(line)),
      'the 500 cause is in the log, where operators need it',
    )
  })

  it('never answers with a stack trace, SQL or a driver message', async () => {
    const probe = await startServer({ database })
    try {
      const responses = [
        await call(probe, 'POST', '/v1/pets', { body: '{"name":', headers: { 'content-type': 'application/json' } }),
        await call(probe, 'POST', '/v1/pets', { body: { name: 'x'.repeat(300), categoryId: 2n ** 64n } }),
        await call(probe, 'GET', "/v1/pets/1'%20or%201=1--"),
        await call(probe, 'GET', '/v1/pets?status=available%27%3B%20drop%20table%20pets'),
        await call(probe, 'GET', '/v1/pets', { key: "'; drop table api_keys; --" }),
      ]
      await sql`drop table pets`.execute(probe.store.db)
      responses.push(
        await call(probe, 'GET', '/v1/pets'),
        await call(probe, 'POST', '/v1/pets', { body: { name: 'x', categoryId: 1 } }),
      )
      for (const response of responses) {
        assert.ok(response.status >= 400)
        assert.doesNotMatch(response.text, INTERNALS, response.text)
        assert.doesNotMatch(response.headers.get('content-type') ?? '', /html/)
      }
      assert.deepEqual(
        responses.map((response) => response.status),
        [400, 400, 400, 400, 401, 500, 500],
      )
    } finally {
      await probe.close()
    }
  })
})
