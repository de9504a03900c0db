// Early answers arrive (docs/security.md, API4): a 401/413 sent before an oversized body was read
// reaches the client as the JSON Error body, never as EPIPE or ECONNRESET, because the connection
// closes lingering (src/http/connection/lingering-close.ts); and what a lingering connection holds is bounded.
import assert from 'node:assert/strict'
import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { after, before, it } from 'node:test'
import { describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { LINGER_BYTES, LINGER_MS } from '../../src/http/connection/lingering-close.js'

const MB = 1_000_000
const TRIES = 20
type Key = 'a valid key' | 'no key'

/** What one oversized POST ended with: the answer's `status code` when read in full, else the error's code. */
type Outcome = string

function headersFor(server: TestServer, key: Key): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key === 'a valid key') headers.authorization = `Bearer ${server.key}`
  return headers
}

/** A POST /v1/pets of `size` bytes with fetch: a Buffer (Content-Length) or, `chunked`, a stream. */
async function postWithFetch(server: TestServer, size: number, key: Key, chunked = false): Promise<Outcome> {
  const bytes = Buffer.alloc(size, 0x61)
  const body = chunked
    ? new ReadableStream({
        start(controller) {
          for (let at = 0; at < size; at += 64 * 1024) controller.enqueue(bytes.subarray(at, at + 64 * 1024))
          controller.close()
        },
      })
    : bytes
  try {
    const response = await fetch(`${server.origin}/v1/pets`, {
      method: 'POST',
      headers: headersFor(server, key),
      body,
      ...(chunked ? { duplex: 'half' } : {}),
    } as RequestInit)
    const { code } = (await response.json()) as { code: string }
    return `${response.status} ${code}`
  } catch (error) {
    const { cause } = error as { cause?: { code?: string } }
    return `error ${cause?.code ?? String(error)}`
  }
}

/**
 * A POST /v1/pets of `size` bytes with http.request, written at once (`req.end(body)`; chunked: in
 * 64 KiB writes without Content-Length). `ceaseOnAnswer`: once the answer is read, stop sending and
 * close, as RFC 9112 §9.5 asks of a client; otherwise keep sending, as http.request does by itself.
 * `errorAtMs`: when the request failed after its answer was read, how long after the request began.
 */
function postWithRequest(
  server: TestServer,
  size: number,
  key: Key,
  { ceaseOnAnswer = false, chunked = false } = {},
): Promise<{ outcome: Outcome; errorAtMs?: number }> {
  return new Promise((resolve) => {
    const headers = headersFor(server, key)
    if (!chunked) headers['content-length'] = String(size)
    const req = request(`${server.origin}/v1/pets`, { method: 'POST', headers, agent: false })
    let answer: string | undefined
    const startedAt = Date.now()
    let error: string | undefined
    let errorAtMs: number | undefined
    req.on('response', (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        text += chunk
      })
      response.on('end', () => {
        answer = `${response.statusCode} ${(JSON.parse(text) as { code: string }).code}`
        if (ceaseOnAnswer) req.destroy()
      })
    })
    req.on('error', (failure: NodeJS.ErrnoException) => {
      error = failure.code ?? failure.message
      if (answer !== undefined) errorAtMs = Date.now() - startedAt
    })
    req.on('close', () => {
      // An error after the answer (the upload cut short) is reported apart from the answer.
      if (answer !== undefined && errorAtMs !== undefined) resolve({ outcome: answer, errorAtMs })
      else resolve({ outcome: error !== undefined ? `error ${error}` : (answer ?? 'error no answer') })
    })
    const bytes = Buffer.alloc(size, 0x61)
    if (!chunked) req.end(bytes)
    else {
      for (let at = 0; at < size; at += 64 * 1024) req.write(bytes.subarray(at, at + 64 * 1024))
      req.end()
    }
  })
}

const expected = (key: Key) => (key === 'a valid key' ? '413 body_too_large' : '401 missing_api_key')

/** Counts of each outcome, e.g. `{ '413 body_too_large': 20 }`. */
function tally(outcomes: Outcome[]): Record<Outcome, number> {
  const counts: Record<Outcome, number> = {}
  for (const outcome of outcomes) counts[outcome] = (counts[outcome] ?? 0) + 1
  return counts
}

describeEachDatabase('early answers to oversized bodies arrive (lingering close)', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  for (const size of [1 * MB, 10 * MB]) {
    for (const key of ['a valid key', 'no key'] as const) {
      it(`fetch reads the JSON ${expected(key)} for each of ${TRIES} bodies of ${size / MB} MB sent with ${key}`, async () => {
        const outcomes: Outcome[] = []
        for (let i = 0; i < TRIES; i++) outcomes.push(await postWithFetch(server, size, key))
        assert.deepEqual(tally(outcomes), { [expected(key)]: TRIES })
      })

      // http.request keeps sending past the answer unless told to stop; a client that stops as RFC
      // 9112 §9.5 asks is what every body size must serve. A 1 MB body fits the lingering budget,
      // so there even a client that sends it all meets no error.
      it(`http.request reads the JSON ${expected(key)} for each of ${TRIES} bodies of ${size / MB} MB sent with ${key}`, async () => {
        const outcomes: Outcome[] = []
        for (let i = 0; i < TRIES; i++) {
          const { outcome, errorAtMs } = await postWithRequest(server, size, key, { ceaseOnAnswer: size > MB })
          outcomes.push(errorAtMs === undefined ? outcome : `${outcome}, then an error`)
        }
        assert.deepEqual(tally(outcomes), { [expected(key)]: TRIES })
      })
    }
  }

  it('a client that keeps sending a 10 MB body past the answer still reads the whole answer first; its upload is cut after LINGER_MS', async () => {
    for (const key of ['a valid key', 'no key'] as const) {
      const { outcome, errorAtMs } = await postWithRequest(server, 10 * MB, key)
      assert.equal(outcome, expected(key))
      // The server cuts the upload no sooner than LINGER_MS after its answer, so after the request
      // began (or never, when the kernel's buffers took all of it); less 50 ms, as a timer starts
      // from the event loop's cached time.
      if (errorAtMs !== undefined) assert.ok(errorAtMs >= LINGER_MS - 50, `cut ${errorAtMs} ms after the request began`)
    }
  })

  for (const key of ['a valid key', 'no key'] as const) {
    it(`chunked bodies without Content-Length (1 MB, 10 MB) sent with ${key} get the JSON ${expected(key)}, by fetch and by http.request`, async () => {
      const outcomes: Outcome[] = []
      for (const size of [1 * MB, 10 * MB]) {
        for (let i = 0; i < 5; i++) {
          outcomes.push(await postWithFetch(server, size, key, true))
          outcomes.push((await postWithRequest(server, size, key, { chunked: true, ceaseOnAnswer: true })).outcome)
        }
      }
      assert.deepEqual(tally(outcomes), { [expected(key)]: 20 })
    })
  }
})

/** The server side of the next connection `server` accepts. */
function nextServerSocket(server: TestServer): Promise<Socket> {
  return new Promise((resolve) => server.app.server.once('connection', resolve))
}

/**
 * Opens a socket, writes `head`, then streams a body for as long as the socket takes it, never
 * stopping for the answer (a client that ignores it). `answered` settles with the first bytes of the
 * answer, `closed` once the server has closed the connection.
 */
function pushRegardless(
  server: TestServer,
  head: string,
): { answered: Promise<void>; closed: Promise<{ response: string; closedMs: number }> } {
  const started = Date.now()
  // Half-open: the server's FIN after its answer does not make this client stop sending.
  const socket = connect({ port: Number(new URL(server.origin).port), host: '127.0.0.1', allowHalfOpen: true })
  let response = ''
  const chunk = Buffer.alloc(64 * 1024)
  const pump = () => {
    while (!socket.destroyed && socket.writable) if (!socket.write(chunk)) return socket.once('drain', pump)
  }
  socket.setEncoding('latin1')
  const answered = new Promise<void>((resolve) => socket.once('data', () => resolve()))
  socket.on('data', (text: string) => {
    response += text
  })
  socket.on('error', () => {}) // the reset once the lingering ends: expected here
  const closed = new Promise<{ response: string; closedMs: number }>((resolve) =>
    socket.on('close', () => resolve({ response, closedMs: Date.now() - started })),
  )
  socket.write(head, pump)
  return { answered, closed }
}

const UNKEYED_HEAD = 'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n'

describeEachDatabase('what a lingering connection holds', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database, maxConnections: 2 })
  })
  after(() => server.close())

  it('ends the lingering once the client closes, and leaves no timer behind', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length
    const before = timers()
    const accepted = nextServerSocket(server)
    const started = Date.now()
    // 100 KB without a key: the whole body is sent, then the client closes on reading the answer.
    const response = await postWithRequest(server, 100_000, 'no key')
    assert.equal(response.outcome, '401 missing_api_key')
    const socket = await accepted
    if (!socket.destroyed) await new Promise((resolve) => socket.once('close', resolve))
    assert.ok(Date.now() - started < LINGER_MS, `the server kept the connection ${Date.now() - started} ms`)
    assert.equal(timers(), before, 'the lingering timer is cleared')
  })

  it('never serves a request pipelined behind the unread body', async () => {
    let pipelinedSeen = false
    const spot = (request: { headers: Record<string, unknown> }) => {
      if (request.headers['x-request-id'] === 'pipelined-behind-body') pipelinedSeen = true
    }
    server.app.server.on('request', spot)
    const socket = connect({ port: Number(new URL(server.origin).port), host: '127.0.0.1', allowHalfOpen: true })
    let response = ''
    socket.setEncoding('latin1')
    const answered = new Promise<void>((resolve) =>
      socket.on('data', (text: string) => {
        response += text
        if (/\r\n\r\n\{.*\}$/s.test(response)) resolve()
      }),
    )
    const closed = new Promise((resolve) => socket.once('close', resolve))
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n${'a'.repeat(1000)}`,
    )
    await answered
    // The rest of the body, then a request that would be served if the body's bytes reached the parser.
    socket.end(
      `${'a'.repeat(99_000)}GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nX-Request-Id: pipelined-behind-body\r\n\r\n`,
    )
    await closed
    assert.equal(response.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, `one answer only:\n${response}`)
    assert.match(response, /^HTTP\/1\.1 401 /)
    server.app.server.off('request', spot)
    assert.equal(pipelinedSeen, false, 'the pipelined request reached the server')
  })

  it('counts against MAX_CONNECTIONS while it lingers, is the first closed to make room once answered, then frees its slot', async () => {
    const accepted = nextServerSocket(server)
    const lingering = pushRegardless(server, UNKEYED_HEAD)
    const socket = await accepted
    await lingering.answered
    // With one connection lingering and one held open, a third is past MAX_CONNECTIONS (2): the
    // lingering one makes room (its answer is out), not the idle one, whose client may still use it.
    const held = connect(Number(new URL(server.origin).port), '127.0.0.1')
    await new Promise((resolve) => held.once('connect', resolve))
    const heldClosed = new Promise((resolve) => held.once('close', resolve))
    try {
      const status = await fetch(`${server.origin}/healthz`).then(
        (response) => response.status,
        () => 'closed',
      )
      assert.equal(status, 200, 'a connection past MAX_CONNECTIONS is served')
      const first = await Promise.race([heldClosed.then(() => 'held'), lingering.closed.then(() => 'lingering')])
      assert.equal(first, 'lingering', 'the lingering connection made room, not the idle one')
    } finally {
      held.destroy()
    }
    const { response, closedMs } = await lingering.closed
    assert.match(response, /^HTTP\/1\.1 401 .*\r\n\r\n\{"code":"missing_api_key",.*\}$/s, 'the whole answer arrived')
    assert.ok(closedMs < LINGER_MS, `closed after ${closedMs} ms`)
    assert.ok(
      socket.bytesRead <= LINGER_BYTES + 256 * 1024,
      `the server read ${socket.bytesRead} bytes: the lingering budget (${LINGER_BYTES}) plus what arrived before the answer`,
    )
    // Node counts a connection until its close is processed; poll briefly for the slot to come back.
    let status: number | string = 'closed'
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = await fetch(`${server.origin}/healthz`).then(
        (reply) => reply.status,
        () => 'closed',
      )
    }
    assert.equal(status, 200, 'the slot is free again')
  })
})

describeEachDatabase('closing the server while a connection lingers', (database) => {
  it('does not delay the close by more than LINGER_MS', async () => {
    const server = await startServer({ database })
    const lingering = pushRegardless(server, UNKEYED_HEAD)
    await lingering.answered
    const started = Date.now()
    await server.close()
    const closeMs = Date.now() - started
    const { response } = await lingering.closed
    assert.match(response, /^HTTP\/1\.1 401 /)
    assert.ok(closeMs < LINGER_MS + 1_000, `closing took ${closeMs} ms`)
  })
})
