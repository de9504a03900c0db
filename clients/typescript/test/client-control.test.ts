// The TypeScript client's per-call control and what its answers and errors carry: a caller's
// AbortSignal, per-call and default deadlines (against a server that accepts and never answers),
// withResponse() headers, resuming iteration from a cursor, the default page size, and errors
// narrowed by `code` with their request id and Idempotency-Key.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { describeEachDatabase, startServer, type TestServer } from '../../../scripts/lib/test-server.js'
import { MAX_PAGE_LIMIT } from '../../../src/schemas.js'
import {
  type AnimalStoreClient,
  AnimalStoreError,
  AnimalStoreTimeoutError,
  createClient,
  DEFAULT_ITERATION_LIMIT,
  type Pet,
} from '../src/index.js'

/** A TCP server on 127.0.0.1 that accepts connections and never answers (a hung service). */
async function silentServer(): Promise<{ baseUrl: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    async close() {
      for (const socket of sockets) socket.destroy()
      server.close()
      await once(server, 'close')
    },
  }
}

/** Runs `action`, asserting it rejects; returns the rejection and how long it took, in ms. */
async function rejection(action: () => Promise<unknown>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now()
  try {
    await action()
  } catch (error) {
    return { error, ms: performance.now() - started }
  }
  assert.fail('expected the call to reject')
}

describe('TypeScript client: cancellation and deadlines (a server that never answers)', () => {
  let silent: Awaited<ReturnType<typeof silentServer>>
  before(async () => {
    silent = await silentServer()
  })
  after(() => silent.close())

  it('rejects with the AbortSignal reason as soon as the caller aborts', async () => {
    const client = createClient({ baseUrl: silent.baseUrl, apiKey: 'ask_unused' })
    const controller = new AbortController()
    setTimeout(() => controller.abort(), 100)
    const { error, ms } = await rejection(() => client.listPets({}, { signal: controller.signal }))
    assert.ok(error instanceof DOMException && error.name === 'AbortError', `got ${error}`)
    assert.ok(ms < 2000, `took ${ms} ms`)
  })

  it('throws AnimalStoreTimeoutError at the per-call timeoutMs, retries included, with the request id and Idempotency-Key', async () => {
    const client = createClient({ baseUrl: silent.baseUrl, apiKey: 'ask_unused', attemptTimeoutMs: 100 })
    const idempotencyKey = randomUUID()
    const { error, ms } = await rejection(() =>
      client.createPet({ name: 'Rex', categoryId: 1n }, { timeoutMs: 400, idempotencyKey, requestId: 'trace-1' }),
    )
    assert.ok(error instanceof AnimalStoreTimeoutError, `got ${error}`)
    assert.match(error.message, /deadline of 400 ms/)
    assert.ok(error.cause !== undefined)
    assert.equal(error.requestId, 'trace-1')
    assert.equal(error.idempotencyKey, idempotencyKey)
    assert.ok(ms >= 350 && ms < 2000, `took ${ms} ms`)
  })

  it('applies the client default deadline (timeoutMs) when a call gives none', async () => {
    const client = createClient({ baseUrl: silent.baseUrl, apiKey: 'ask_unused', timeoutMs: 300 })
    const { error, ms } = await rejection(() => client.listPets())
    assert.ok(error instanceof AnimalStoreTimeoutError, `got ${error}`)
    assert.ok(ms >= 250 && ms < 2000, `took ${ms} ms`)
  })

  it('rethrows what onRetry throws, unwrapped, and sends no further attempt', async () => {
    const stop = new Error('stop retrying')
    let calls = 0
    const client = createClient({
      baseUrl: silent.baseUrl,
      apiKey: 'ask_unused',
      attemptTimeoutMs: 100,
      onRetry: () => {
        calls++
        throw stop
      },
    })
    const { error } = await rejection(() => client.listPets())
    assert.equal(error, stop)
    assert.equal(calls, 1)
  })

  it('throws AnimalStoreTimeoutError naming the attempts when every attempt times out before the deadline', async () => {
    const client = createClient({
      baseUrl: silent.baseUrl,
      apiKey: 'ask_unused',
      attemptTimeoutMs: 100,
      retries: 1,
      maxBackoffMs: 10,
    })
    const { error } = await rejection(() => client.listPets())
    assert.ok(error instanceof AnimalStoreTimeoutError, `got ${error}`)
    assert.match(error.message, /100 ms, 2 attempt/)
  })
})

describeEachDatabase('TypeScript client: responses, paging and errors', (database) => {
  let server: TestServer
  let client: AnimalStoreClient
  const created: Pet[] = []
  before(async () => {
    server = await startServer({ database })
    client = createClient({ baseUrl: `${server.origin}/v1`, apiKey: server.key })
    for (let i = 0; i < 230; i++) created.push(await client.createPet({ name: `pet ${i}`, categoryId: BigInt(i) }))
  })
  after(() => server.close())

  it('withResponse() gives the response headers of a success and the echoed request id', async () => {
    const { data, response, requestId } = await client
      .createPet({ name: 'Headers', categoryId: 7n }, { requestId: 'my-trace-7' })
      .withResponse()
    assert.equal(data.name, 'Headers')
    assert.equal(requestId, 'my-trace-7')
    assert.equal(response.status, 201)
    assert.equal(response.headers.get('location'), `/v1/pets/${data.id}`)
    assert.match(response.headers.get('ratelimit') ?? '', /^default;r=\d+;t=\d+$/)
    assert.equal(response.headers.get('idempotent-replayed'), null)
    const page = await client.listPets({ limit: 1 }).withResponse()
    assert.equal(page.data.pets.length, 1)
    assert.match(page.response.headers.get('link') ?? '', /rel="next"/)
  })

  it('shows a replayed create through Idempotent-Replayed, with the same pet', async () => {
    const idempotencyKey = randomUUID()
    const first = await client.createPet({ name: 'Once', categoryId: 8n }, { idempotencyKey }).withResponse()
    const again = await client.createPet({ name: 'Once', categoryId: 8n }, { idempotencyKey }).withResponse()
    assert.deepEqual(again.data, first.data)
    assert.equal(first.response.headers.get('idempotent-replayed'), null)
    assert.equal(again.response.headers.get('idempotent-replayed'), 'true')
  })

  it(`iterates ${DEFAULT_ITERATION_LIMIT} pets per request unless told otherwise`, async () => {
    const pages: number[] = []
    for await (const page of client.pages()) pages.push(page.pets.length)
    assert.equal(pages[0], 100)
    assert.equal(
      pages.reduce((sum, size) => sum + size, 0),
      created.length + 2, // and the two added above (a replay adds none)
    )
  })

  it('resumes iteration from the nextCursor of the last page finished, losing and repeating none', async () => {
    const before: Pet[] = []
    let saved: string | undefined
    for await (const page of client.pages({ limit: 50 })) {
      before.push(...page.pets)
      saved = page.nextCursor
      if (before.length === 100) break // interrupted here
    }
    assert.ok(saved)
    const rest: Pet[] = []
    for await (const pet of client.pets({ limit: 50, cursor: saved })) rest.push(pet)
    assert.deepEqual([...before, ...rest].slice(0, created.length), created)
    assert.equal(new Set([...before, ...rest].map((pet) => pet.id)).size, before.length + rest.length)
  })

  it('narrows errors by code: details only on invalid_request, with every failing field', async () => {
    const { error } = await rejection(() => client.listPets({ limit: MAX_PAGE_LIMIT + 1 }))
    assert.ok(error instanceof AnimalStoreError)
    if (error.code !== 'invalid_request') assert.fail(`got ${error.code}`)
    // Type-checked: `details` is ErrorDetail[] here, no `?.` needed.
    assert.deepEqual(
      error.details.map((detail) => detail.field),
      ['limit'],
    )
    const { error: missing } = await rejection(() => client.getPet(9_223_372_036_854_775_807n))
    assert.ok(missing instanceof AnimalStoreError && missing.code === 'pet_not_found')
    assert.equal(missing.details, undefined)
    assert.equal(missing.retryAfterMs, undefined)
    // withResponse() rejects the same way, and leaves no unhandled rejection behind (the promise of
    // the data alone, which nobody awaits then, must not crash a process that treats those as fatal).
    const unhandled: unknown[] = []
    const record = (reason: unknown) => void unhandled.push(reason)
    process.on('unhandledRejection', record)
    try {
      await assert.rejects(client.getPet(9_223_372_036_854_775_807n).withResponse(), (error: unknown) => {
        assert.ok(error instanceof AnimalStoreError && error.code === 'pet_not_found')
        return true
      })
      await new Promise((resolve) => setImmediate(resolve)) // Node reports unhandled rejections after the microtasks
      assert.deepEqual(unhandled, [])
    } finally {
      process.off('unhandledRejection', record)
    }
  })

  it('gives a failed create its Idempotency-Key and request id, to try again later safely', async () => {
    const idempotencyKey = randomUUID()
    const { error } = await rejection(() => client.createPet({ name: 'lone\uD800', categoryId: 1n }, { idempotencyKey }))
    assert.ok(error instanceof AnimalStoreError && error.code === 'invalid_request')
    assert.equal(error.idempotencyKey, idempotencyKey)
    assert.equal(error.details[0]?.field, 'name')
    assert.match(error.requestId, /^[0-9a-f-]{36}$/)
    const { error: generated } = await rejection(() => client.createPet({ name: '', categoryId: 1n }))
    assert.ok(generated instanceof AnimalStoreError)
    assert.match(generated.idempotencyKey ?? '', /^[0-9a-f-]{36}$/, 'the random key is kept too')
  })

  it('reads 401 challenges: code invalid_api_key and the WWW-Authenticate header', async () => {
    const stranger = createClient({ baseUrl: `${server.origin}/v1`, apiKey: 'ask_wrong' })
    const { error } = await rejection(() => stranger.listPets())
    assert.ok(error instanceof AnimalStoreError && error.code === 'invalid_api_key')
    assert.match(error.headers.get('www-authenticate') ?? '', /^Bearer realm="animal-store"/)
  })
})
