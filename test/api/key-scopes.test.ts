// Key scopes (README, "403"; RFC 6750 §3.1): a `read` key lists and reads, and its createPet is
// answered 403 insufficient_scope with the challenge naming `write`, after authentication and the
// rate limit, before the body is read: no pet and no Idempotency-Key record is written. A `write`
// key (the default) still creates. Stored keys and API_KEYS entries alike.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, it } from 'node:test'
import { sql } from 'kysely'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'
import { ERROR_CODES } from '../../src/http/errors.js'

const CHALLENGE = 'Bearer realm="animal-store", error="insufficient_scope", scope="write"'
const FORBIDDEN_BODY = { code: 'insufficient_scope', message: ERROR_CODES.insufficient_scope.message, status: 403 }
/** API_KEYS entries: one read-only, one with no scope given (so `write`). */
const CONFIGURED_READ = 'browser-page-key-Xk3pQ9vR2mL7'
const CONFIGURED_WRITE = 'backend-key-Zr0Q9YbVxk1mN4tU'

describeEachDatabase('key scopes: read keys list and read, only write keys create', (database) => {
  let server: TestServer
  let readKey: string
  let petId: string
  before(async () => {
    server = await startServer({ database, apiKeys: [`${CONFIGURED_READ}:scope=read`, CONFIGURED_WRITE] })
    readKey = (await createKey(server.store.apiKeys, 'page', { scope: 'read', rateLimit: undefined })).key
    const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
    assert.equal(created.status, 201)
    petId = String(created.exact.id)
  })
  after(() => server.close())

  const rows = async (table: 'pets' | 'idempotency_keys') =>
    Number(
      (await sql<{ n: number | bigint | string }>`select count(*) as n from ${sql.table(table)}`.execute(server.store.db)).rows[0]
        ?.n,
    )

  for (const [which, key] of [
    ['a stored read key', () => readKey],
    ['a read API_KEYS entry', () => CONFIGURED_READ],
  ] as const) {
    it(`${which}: listPets and getPet answer 200`, async () => {
      const list = await call(server, 'GET', '/v1/pets', { key: key() })
      assert.equal(list.status, 200)
      assert.ok(list.json.some((pet: { name: string }) => pet.name === 'Rex'))
      const one = await call(server, 'GET', `/v1/pets/${petId}`, { key: key() })
      assert.equal(one.status, 200)
      assert.equal(one.json.name, 'Rex')
    })

    it(`${which}: createPet is 403 insufficient_scope with the RFC 6750 challenge; no pet, no Idempotency-Key record`, async () => {
      const before = { pets: await rows('pets'), records: await rows('idempotency_keys') }
      const response = await call(server, 'POST', '/v1/pets', {
        key: key(),
        body: { name: 'Not stored', categoryId: 2 },
        headers: { 'idempotency-key': randomUUID() },
      })
      assert.equal(response.status, 403)
      assert.deepEqual(response.json, FORBIDDEN_BODY)
      assert.equal(response.headers.get('www-authenticate'), CHALLENGE)
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/)
      assert.match(
        response.headers.get('ratelimit') ?? '',
        /^default;r=\d+;t=\d+$/,
        'counted against the key like any keyed request',
      )
      assert.deepEqual({ pets: await rows('pets'), records: await rows('idempotency_keys') }, before)
    })
  }

  it('a read key is refused before its body is parsed or validated: 403, not 400 or 415', async () => {
    const bodies: Array<[string, Record<string, string> | undefined, string]> = [
      ['an invalid pet', undefined, JSON.stringify({ name: '', categoryId: 'x' })],
      ['malformed JSON', undefined, '{"name":'],
      ['a body that is not JSON', { 'content-type': 'text/plain' }, 'name=Rex'],
    ]
    for (const [what, headers, body] of bodies) {
      const response = await call(server, 'POST', '/v1/pets', {
        key: readKey,
        body,
        headers: { 'content-type': 'application/json', ...headers },
      })
      assert.equal(response.status, 403, what)
      assert.equal(response.json.code, 'insufficient_scope', what)
    }
  })

  it('a read key still gets 404 and 405 for what no route answers (no scope is needed there)', async () => {
    assert.equal((await call(server, 'GET', '/v1/owners', { key: readKey })).status, 404)
    const wrongMethod = await call(server, 'DELETE', '/v1/pets', { key: readKey })
    assert.equal(wrongMethod.status, 405)
  })

  it('without a key or with a wrong one, createPet is still 401, never 403', async () => {
    assert.equal((await call(server, 'POST', '/v1/pets', { key: null, body: { name: 'x', categoryId: 1 } })).status, 401)
    const wrong = await call(server, 'POST', '/v1/pets', { key: `${CONFIGURED_READ}x`, body: { name: 'x', categoryId: 1 } })
    assert.equal(wrong.status, 401)
  })

  for (const [which, key] of [
    ['the default stored key (write)', () => server.key],
    [
      'a stored key created --scope write',
      async () => (await createKey(server.store.apiKeys, 'backend', { scope: 'write', rateLimit: undefined })).key,
    ],
    ['an API_KEYS entry without a scope', () => CONFIGURED_WRITE],
  ] as const) {
    it(`${which} still creates: 201, the pet stored, its Idempotency-Key record kept`, async () => {
      const before = { pets: await rows('pets'), records: await rows('idempotency_keys') }
      const response = await call(server, 'POST', '/v1/pets', {
        key: await key(),
        body: { name: 'Created', categoryId: 3 },
        headers: { 'idempotency-key': randomUUID() },
      })
      assert.equal(response.status, 201)
      assert.deepEqual(
        { pets: await rows('pets'), records: await rows('idempotency_keys') },
        {
          pets: before.pets + 1,
          records: before.records + 1,
        },
      )
    })
  }
})

describeEachDatabase('key scopes and the rate limit', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  it('a read key past its own rate limit gets 429 for createPet: the limit is decided before the scope', async () => {
    const { key } = await createKey(server.store.apiKeys, 'page', { scope: 'read', rateLimit: 2 })
    for (let i = 0; i < 2; i++) assert.equal((await call(server, 'GET', '/v1/pets', { key })).status, 200)
    const limited = await call(server, 'POST', '/v1/pets', { key, body: { name: 'x', categoryId: 1 } })
    assert.equal(limited.status, 429)
    assert.equal(limited.json.code, 'rate_limited')
    assert.equal(limited.headers.get('www-authenticate'), null)
  })
})
