// The TypeScript client refuses a missing or malformed API key when it is created, before any
// request (not with a 401 later), and its errors print under their own class names, none of them a
// DOMException's (`TimeoutError` is what AbortSignal.timeout() rejects with).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { inspect } from 'node:util'
import { startServer, type TestServer } from '../../../scripts/lib/test-server.js'
import { AnimalStoreError, AnimalStoreTimeoutError, createClient, NetworkError } from '../src/index.js'

describe('createClient: the API key is checked when the client is created', () => {
  const cases: Array<[string, string | undefined, RegExp]> = [
    ['undefined (an unset environment variable)', undefined, /apiKey is missing or empty/],
    ['empty', '', /apiKey is missing or empty/],
    ['blank', '   ', /apiKey is missing or empty/],
    ['the text "undefined" (a template string of an unset variable)', 'undefined', /apiKey is the text "undefined"/],
    ['the text "null"', 'null', /apiKey is the text "null"/],
    ['not a bearer token (a line break)', 'ask_abc\nX-Injected: 1', /apiKey is not a bearer token/],
    ['not a bearer token (a space inside)', 'ask_abc def', /apiKey is not a bearer token/],
  ]
  for (const [what, apiKey, message] of cases) {
    it(`throws a TypeError naming the problem when it is ${what}`, () => {
      assert.throws(
        () => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey }),
        (error: unknown) => {
          assert.ok(error instanceof TypeError)
          assert.match(error.message, message)
          assert.match(error.message, /ANIMAL_STORE_KEY/, 'says how to pass one')
          if (apiKey && apiKey !== 'undefined' && apiKey !== 'null')
            assert.ok(!error.message.includes(apiKey), 'the key is not echoed')
          return true
        },
      )
    })
  }

  it('accepts the service key formats: ask_ keys and API_KEYS values (base64 with = padding)', () => {
    for (const apiKey of [`ask_${'A-_b'.repeat(10)}xyz`, 'c2VjcmV0LWtleS1mb3ItdGVzdHM+/w==']) {
      assert.doesNotThrow(() => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey }))
    }
  })

  it('throws a RangeError for retries that are not a whole number from 0 up', () => {
    for (const retries of [-1, 1.5, Number.NaN]) {
      assert.throws(() => createClient({ baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'ask_x', retries }), RangeError)
    }
  })
})

describe('the errors print under their own class names', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  /** The error `action` rejects with. */
  async function caught(action: () => Promise<unknown>): Promise<Error> {
    try {
      await action()
    } catch (error) {
      assert.ok(error instanceof Error)
      return error
    }
    assert.fail('expected a rejection')
  }

  it('AnimalStoreError: its class, name, stack and inspect() say AnimalStoreError', async () => {
    const error = await caught(() => createClient({ baseUrl: `${server.origin}/v1`, apiKey: 'ask_wrong' }).listPets())
    assert.ok(error instanceof AnimalStoreError)
    assert.equal(error.constructor.name, 'AnimalStoreError')
    assert.equal(error.name, 'AnimalStoreError')
    assert.match(error.stack ?? '', /^AnimalStoreError: The API key/)
    assert.match(inspect(error), /^AnimalStoreError: The API key/)
    assert.doesNotMatch(inspect(error), /ErrorClass/)
  })

  it('AnimalStoreTimeoutError: its own name, distinct from the DOMException of AbortSignal.timeout()', async () => {
    const silent = createServer(() => {}) // accepts and never answers
    silent.listen(0, '127.0.0.1')
    await once(silent, 'listening')
    try {
      const baseUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`
      const error = await caught(() => createClient({ baseUrl, apiKey: 'ask_x', retries: 0 }).listPets({}, { timeoutMs: 100 }))
      assert.ok(error instanceof AnimalStoreTimeoutError)
      assert.equal(error.constructor.name, 'AnimalStoreTimeoutError')
      assert.equal(error.name, 'AnimalStoreTimeoutError')
      assert.match(inspect(error), /^AnimalStoreTimeoutError: no answer within the call's deadline of 100 ms/)
      const domTimeout = await caught(() => fetch(`${baseUrl}/pets`, { signal: AbortSignal.timeout(50) }))
      assert.equal(domTimeout.name, 'TimeoutError', "the platform's name, which ours must not share")
      assert.notEqual(error.name, domTimeout.name)
    } finally {
      silent.closeAllConnections()
      silent.close()
    }
  })

  it('NetworkError: its name, and a message that carries the innermost cause (ECONNREFUSED …)', async () => {
    const closed = createServer()
    closed.listen(0, '127.0.0.1')
    await once(closed, 'listening')
    const { port } = closed.address() as AddressInfo
    closed.close()
    await once(closed, 'close')
    const error = await caught(() =>
      createClient({ baseUrl: `http://127.0.0.1:${port}/v1`, apiKey: 'ask_x', retries: 0 }).listPets(),
    )
    assert.ok(error instanceof NetworkError)
    assert.equal(error.constructor.name, 'NetworkError')
    assert.match(
      error.message,
      new RegExp(`^no answer from the service: fetch failed \\(.*ECONNREFUSED 127\\.0\\.0\\.1:${port}\\)$`),
    )
  })
})
