// The TypeScript client behind a balancer that is not ours: Debian's nginx as a plain reverse proxy,
// with its own HTML error pages. A 502 (upstream refused) and a 504 (upstream too slow) are retried,
// for GETs and for creates (every attempt carries the same Idempotency-Key); `retries` per call;
// and the onRequest / onResponse hooks see every attempt. Between nginx and the live service sits a
// node:http relay on a fixed port that can be absent (nginx answers 502) or hold an answer (504).
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { type Nginx, startPlainNginx } from '../../../scripts/lib/nginx.js'
import { describeEachDatabase, startServer, type TestServer } from '../../../scripts/lib/test-server.js'
import { AnimalStoreError, createClient, type RequestEvent, type ResponseEvent, type RetryEvent } from '../src/index.js'
import { countNamed, freePort, relay } from './support/relay.js'

/**
 * proxy_read_timeout of the impatient nginx, in seconds: a held answer becomes its 504 after this.
 * The other nginx waits PATIENT_S, so that a slow answer on a busy machine is not a 504 there.
 */
const READ_TIMEOUT_S = 1
const PATIENT_S = 60

/** Hooks that record every event, for a client's options. */
function recorder() {
  const requests: RequestEvent[] = []
  const responses: ResponseEvent[] = []
  const retries: RetryEvent[] = []
  return {
    requests,
    responses,
    retries,
    hooks: {
      onRequest: (event: RequestEvent) => void requests.push(event),
      onResponse: (event: ResponseEvent) => void responses.push(event),
      onRetry: (event: RetryEvent) => void retries.push(event),
    },
  }
}

describeEachDatabase('TypeScript client behind a balancer (nginx, its own HTML error pages)', (database) => {
  let server: TestServer
  let nginx: Nginx
  let impatient: Nginx
  let upstreamPort: number
  let baseUrl: string
  let upstream: ReturnType<typeof relay> | undefined
  before(async () => {
    server = await startServer({ database })
    upstreamPort = await freePort()
    nginx = await startPlainNginx(upstreamPort, PATIENT_S)
    impatient = await startPlainNginx(upstreamPort, READ_TIMEOUT_S)
    baseUrl = `${nginx.origin}/v1`
  })
  after(async () => {
    await nginx?.stop()
    await impatient?.stop()
    await server?.close()
  })
  const stopUpstream = async () => upstream?.close()

  it('answers 502 text/html while the upstream is down (what the client meets)', async () => {
    const response = await fetch(`${baseUrl}/pets`, { headers: { authorization: `Bearer ${server.key}` } })
    assert.equal(response.status, 502)
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/)
    assert.match(await response.text(), /502 Bad Gateway/)
  })

  it('retries a create answered 502 by the balancer, with the same Idempotency-Key, and adds one pet', async () => {
    const seen = recorder()
    upstream = relay(server.origin)
    const client = createClient({
      baseUrl,
      apiKey: server.key,
      maxBackoffMs: 50,
      ...seen.hooks,
      onRetry: async (event) => {
        seen.retries.push(event)
        if (!upstream?.server.listening) await upstream?.listen(upstreamPort)
      },
    })
    try {
      const { data, response } = await client.createPet({ name: 'behind 502', categoryId: 9007199254740993n }).withResponse()
      assert.equal(data.categoryId, 9007199254740993n)
      assert.equal(response.status, 201)
      const refused = seen.retries[0]?.error
      assert.ok(refused instanceof AnimalStoreError, `an AnimalStoreError, not ${refused}`)
      assert.equal(refused.status, 502)
      assert.equal(refused.code, 'unexpected_response')
      assert.match(refused.idempotencyKey ?? '', /^[0-9a-f-]{36}$/)
      assert.deepEqual(
        seen.responses.map((event) => event.status),
        [502, 201],
      )
      assert.deepEqual(
        seen.requests.map((event) => `${event.attempt} ${event.method} ${new URL(event.url).pathname}`),
        ['1 POST /v1/pets', '2 POST /v1/pets'],
      )
      assert.equal(new Set(seen.requests.map((event) => event.idempotencyKey)).size, 1, 'one key on every attempt')
      assert.equal(seen.requests[0]?.idempotencyKey, refused.idempotencyKey)
      assert.equal(new Set(seen.requests.map((event) => event.requestId)).size, 1, 'one request id on every attempt')
      assert.ok(seen.responses.every((event) => event.durationMs >= 0 && event.headers instanceof Headers))
      assert.ok(!JSON.stringify(seen.requests).includes(server.key), 'no credentials in the events')
      assert.deepEqual(
        upstream.attempts.map((attempt) => attempt.status),
        [201],
        'the 502 never reached the service',
      )
      assert.equal(await countNamed(server, 'behind 502'), 1)
    } finally {
      await stopUpstream()
    }
  })

  it('retries a create whose answer became the balancer 504, and the replay gives exactly one pet', async () => {
    const seen = recorder()
    upstream = relay(server.origin, { count: 1, how: 'hold' })
    await upstream.listen(upstreamPort)
    const client = createClient({ baseUrl: `${impatient.origin}/v1`, apiKey: server.key, maxBackoffMs: 50, ...seen.hooks })
    try {
      const { data, response } = await client.createPet({ name: 'behind 504', categoryId: -9223372036854775808n }).withResponse()
      assert.equal(data.categoryId, -9223372036854775808n)
      // The held answer is a 504; on a busy machine a later answer may take over a second too, and
      // be another 504 (retried the same way), so only the first and last are fixed.
      const statuses = seen.responses.map((event) => event.status)
      assert.equal(statuses[0], 504)
      assert.equal(statuses.at(-1), 201)
      assert.ok(
        statuses.slice(1, -1).every((status) => status === 504),
        `${statuses}`,
      )
      assert.ok((seen.responses[0]?.durationMs ?? 0) >= READ_TIMEOUT_S * 1000 - 50, 'the 504 came after nginx waited')
      assert.deepEqual(
        upstream.attempts.map((attempt) => attempt.status),
        statuses.map(() => 201),
        'every attempt reached the service, which stored one pet',
      )
      assert.equal(response.headers.get('idempotent-replayed'), 'true')
      assert.equal(seen.retries.length, statuses.length - 1)
      assert.ok(seen.retries.every(({ error }) => error instanceof AnimalStoreError && error.status === 504))
      assert.equal(await countNamed(server, 'behind 504'), 1)
    } finally {
      await stopUpstream()
    }
  })

  it('takes `retries` per call: 0 throws the 502 at once, 2 makes three attempts of a GET', async () => {
    const seen = recorder()
    const client = createClient({ baseUrl, apiKey: server.key, retries: 4, maxBackoffMs: 10, ...seen.hooks })
    await assert.rejects(client.createPet({ name: 'no retry', categoryId: 1n }, { retries: 0 }), (error: unknown) => {
      assert.ok(error instanceof AnimalStoreError)
      assert.equal(error.status, 502)
      assert.equal(error.code, 'unexpected_response')
      assert.match(error.message, /^unexpected 502 response from /)
      return true
    })
    assert.equal(seen.requests.length, 1)
    assert.equal(seen.retries.length, 0)

    const quiet = createClient({ baseUrl, apiKey: server.key, retries: 0, maxBackoffMs: 10, ...seen.hooks })
    await assert.rejects(quiet.listPets({}, { retries: 2 }), (error: unknown) => {
      assert.ok(error instanceof AnimalStoreError && error.status === 502)
      return true
    })
    assert.deepEqual(
      seen.requests.slice(1).map((event) => `${event.attempt} ${event.method}`),
      ['1 GET', '2 GET', '3 GET'],
    )
    await assert.rejects(quiet.listPets({}, { retries: -1 }), RangeError)
  })

  it('ends the call with what onRequest or onResponse throws, unwrapped and not retried', async () => {
    const stop = new Error('stop here')
    let requests = 0
    const failing = createClient({
      baseUrl,
      apiKey: server.key,
      onRequest: () => {
        requests++
        throw stop
      },
    })
    await assert.rejects(failing.listPets(), (error: unknown) => error === stop)
    assert.equal(requests, 1)

    let responses = 0
    const onResponse = createClient({
      baseUrl,
      apiKey: server.key,
      onResponse: async () => {
        responses++
        throw stop
      },
    })
    await assert.rejects(onResponse.createPet({ name: 'hook', categoryId: 1n }), (error: unknown) => error === stop)
    assert.equal(responses, 1, 'the 502 was not retried')
  })
})
