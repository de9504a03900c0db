// Abuse paths closed on the request path: bodies sent to early answers are read only within the
// lingering bounds (LINGER_BYTES, LINGER_MS), `100 Continue` only after authentication and for a body
// within the limit, a 401 keeps a connection with no unread body, and a key created while servers run works at once for
// concurrent first uses, even during a flood of made-up keys.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { after, before, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'
import { LINGER_BYTES, LINGER_MS } from '../../src/http/connection/lingering-close.js'
import { BODY_LIMIT_BYTES } from '../../src/schemas.js'

/**
 * Opens a half-open socket to the server (the server's FIN does not stop it), writes `head`, then
 * streams zeros as the body for as long as the server takes them. `serverRead`: the bytes the
 * server's side of the connection read in all.
 */
function pushBody(
  server: TestServer,
  head: string,
): Promise<{ response: string; bytesSent: number; closedMs: number; serverRead: number }> {
  const started = Date.now()
  const accepted = new Promise<Socket>((resolve) => server.app.server.once('connection', resolve))
  return new Promise((resolve, reject) => {
    const socket: Socket = connect({ port: Number(new URL(server.origin).port), host: '127.0.0.1', allowHalfOpen: true })
    let response = ''
    let bytesSent = 0
    const chunk = Buffer.alloc(64 * 1024)
    const pump = () => {
      while (!socket.destroyed && socket.writable && bytesSent < 1024 ** 3) {
        bytesSent += chunk.length
        if (!socket.write(chunk)) return socket.once('drain', pump)
      }
    }
    socket.setEncoding('latin1')
    socket.on('data', (text: string) => {
      response += text
    })
    socket.on('error', () => {}) // EPIPE/ECONNRESET once the lingering ends: expected
    socket.on('close', async () => {
      const serverSocket = await accepted
      resolve({ response, bytesSent, closedMs: Date.now() - started, serverRead: serverSocket.bytesRead })
    })
    socket.setTimeout(15_000, () => reject(new Error(`still open after 15 s, ${bytesSent} bytes sent`)))
    socket.write(head, pump)
  })
}

/** Reads what the server sends on a fresh socket after `head` within `ms` (the socket is then destroyed). */
function readFor(server: TestServer, head: string, ms: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(Number(new URL(server.origin).port), '127.0.0.1')
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      text += chunk
    })
    socket.on('error', () => {})
    socket.write(head)
    setTimeout(() => {
      socket.destroy()
      resolve(text)
    }, ms)
  })
}

/**
 * The most a loopback connection's kernel buffers can take while the server is not reading: the
 * receiver's and the sender's maximum (net.ipv4.tcp_rmem, tcp_wmem), doubled for the kernel's overhead
 * accounting.
 */
const KERNEL_BUFFERS = ['tcp_rmem', 'tcp_wmem']
  .map((name) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]))
  .reduce((sum, max) => sum + 2 * max, 0)

describeEachDatabase('abuse paths on the request path', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  for (const [what, head] of [
    [
      'without a key (401)',
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n',
    ],
    [
      'with a wrong key (401)',
      'POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong-key-0123456789abcdef\r\nTransfer-Encoding: chunked\r\n\r\n',
    ],
  ] as const) {
    it(`reads at most LINGER_BYTES of a 1 GiB body sent ${what}, and closes within LINGER_MS`, async (t) => {
      const { response, bytesSent, closedMs, serverRead } = await pushBody(server, head)
      t.diagnostic(`server read ${serverRead} bytes, client wrote ${bytesSent}, closed after ${closedMs} ms`)
      assert.match(response, /^HTTP\/1\.1 401 /)
      assert.match(response, /\r\nconnection: close\r\n/i)
      // What the server reads is the lingering budget, plus what arrived before the answer was sent.
      assert.ok(serverRead <= LINGER_BYTES + 256 * 1024, `the server read ${serverRead} bytes`)
      // What the client could write beyond that is what the kernel's socket buffers hold, never the body.
      assert.ok(bytesSent < KERNEL_BUFFERS + LINGER_BYTES + 256 * 1024, `${bytesSent} bytes accepted before the close`)
      assert.ok(closedMs < LINGER_MS + 1_500, `closed after ${closedMs} ms`)
    })
  }

  it('reads at most LINGER_BYTES of a body sent with a key to an unknown path (404) or wrong method (405)', async () => {
    for (const [path, status] of [
      ['/v1/nothing', 404],
      ['/v1/pets/1', 405],
    ] as const) {
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n`
      const { response, serverRead } = await pushBody(server, head)
      assert.match(response, new RegExp(`^HTTP/1\\.1 ${status} `))
      assert.ok(serverRead <= LINGER_BYTES + 256 * 1024, `${path}: the server read ${serverRead} bytes`)
    }
  })

  it('answers a request with a Transfer-Encoding other than chunked once, even when its body comes after the answer', async () => {
    // No Content-Type: answered 415 before any body byte; the body, sent after that answer, does not parse.
    const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nTransfer-Encoding: xchunked\r\n\r\n`
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(server.origin).port), '127.0.0.1')
      let text = ''
      socket.setEncoding('latin1')
      socket.on('data', (chunk: string) => {
        if (text === '') socket.write('{"name":"smuggled","categoryId":1}')
        text += chunk
      })
      socket.on('error', reject)
      socket.on('close', () => resolve(text))
      socket.setTimeout(10_000, () => reject(new Error(`still open after 10 s: ${text}`)))
      socket.write(head)
    })
    const statusLines = answer.match(/HTTP\/1\.1 \d{3} /g) ?? []
    assert.deepEqual(statusLines, ['HTTP/1.1 415 '], `one answer: ${answer}`)
    assert.match(answer, /\r\nconnection: close\r\n/i)
  })

  it('sends 100 Continue only after the key is checked', async () => {
    const expect = (authorization: string) =>
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${authorization}Content-Type: application/json\r\nContent-Length: 40\r\nExpect: 100-continue\r\n\r\n`
    const refused = await readFor(server, expect(''), 300)
    assert.doesNotMatch(refused, /100 Continue/, 'no 100 Continue without a key')
    assert.match(refused, /^HTTP\/1\.1 401 /)
    const admitted = await readFor(server, expect(`Authorization: Bearer ${server.key}\r\n`), 300)
    assert.match(admitted, /^HTTP\/1\.1 100 Continue\r\n\r\n/, 'a valid key is told to send its body')
  })

  it('answers 413 at once, without 100 Continue, to a valid key whose Content-Length is over the limit', async () => {
    for (const length of [BODY_LIMIT_BYTES + 1, 10 * 1024 * 1024]) {
      const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`
      const answer = await readFor(server, head, 300)
      assert.match(answer, /^HTTP\/1\.1 413 /, `Content-Length ${length}: the final status first`)
      assert.doesNotMatch(answer, /100 Continue/)
      assert.match(answer, /"code":"body_too_large"/)
    }
    const within = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: ${BODY_LIMIT_BYTES}\r\nExpect: 100-continue\r\n\r\n`
    assert.match(await readFor(server, within, 300), /^HTTP\/1\.1 100 Continue\r\n\r\n/, 'a body at the limit is wanted')
  })

  it('keeps a kept-alive connection open for valid requests, and after a 401 that left no body unread', async () => {
    const ok = await call(server, 'GET', '/v1/pets')
    assert.equal(ok.headers.get('connection'), 'keep-alive')
    const refused = await call(server, 'GET', '/v1/pets', { key: 'not-a-valid-key-0123456789' })
    assert.equal(refused.status, 401)
    assert.equal(refused.headers.get('connection'), 'keep-alive')
  })

  it('accepts a key created while the server runs on every one of its concurrent first uses', async () => {
    for (let round = 0; round < 5; round++) {
      const { key } = await createKey(server.store.apiKeys, `fresh ${round}`)
      const statuses = await Promise.all(Array.from({ length: 8 }, () => call(server, 'GET', '/v1/pets?limit=1', { key })))
      assert.deepEqual(
        statuses.map((response) => response.status),
        Array(8).fill(200),
      )
    }
  })

  it('accepts a new key at once while a flood of made-up keys is arriving', async () => {
    const madeUp = (i: number) => `ask_${String(i).padStart(43, 'x')}`
    let flooding = true
    const flood = (async () => {
      let sent = 0
      while (flooding) {
        await Promise.all(Array.from({ length: 20 }, () => call(server, 'GET', '/v1/pets', { key: madeUp(sent++) })))
      }
      return sent
    })()
    try {
      for (let round = 0; round < 3; round++) {
        const { key } = await createKey(server.store.apiKeys, `during the flood ${round}`)
        assert.equal((await call(server, 'GET', '/v1/pets?limit=1', { key })).status, 200)
      }
    } finally {
      flooding = false
    }
    assert.ok((await flood) >= 20, 'the flood sent requests')
  })

  it('logs the client address and the key id of each request, never the key', async () => {
    await call(server, 'GET', '/v1/pets?limit=1', { headers: { 'x-request-id': 'trace-me-123' } })
    const line = server.logs
      .map((text) => JSON.parse(text) as Record<string, unknown>)
      .find((entry) => entry.reqId === 'trace-me-123')
    assert.ok(line, 'the request line, with the client-chosen request id')
    assert.equal(line.client, '127.0.0.1')
    assert.match(String(line.keyId), /^key:\d+$/)
    assert.ok(!server.logs.some((text) => text.includes(server.key)), 'the key is never logged')
  })
})

describeEachDatabase('limits on traffic without a valid key', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database, authFailuresPerMinute: 5, maxConnections: 3 })
  })
  after(() => server.close())

  it('answers 429 instead of 401 once an address has failed authentication AUTH_FAILURES_PER_MINUTE times, and still serves valid keys', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 7; i++)
      statuses.push((await call(server, 'GET', '/v1/pets', { key: i % 2 ? null : 'wrong-key-0123456789abcdef' })).status)
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429])
    const limited = await call(server, 'GET', '/v1/pets', { key: null })
    assert.equal(limited.json.code, 'rate_limited')
    assert.match(limited.headers.get('retry-after') ?? '', /^\d+$/)
    assert.equal(limited.headers.get('connection'), 'close')
    assert.equal(limited.headers.get('ratelimit-policy'), 'auth;q=5;w=60')
    assert.equal(limited.headers.get('ratelimit'), `auth;r=0;t=${limited.headers.get('retry-after')}`)
    assert.equal((await call(server, 'GET', '/v1/pets')).status, 200, 'a valid key from the same address is served')
  })

  it('closes a new connection past MAX_CONNECTIONS at once when every open one has a request in progress', async () => {
    const port = Number(new URL(server.origin).port)
    const open = (): Promise<Socket> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => resolve(socket))
        socket.on('error', reject)
      })
    const closedWithin = (socket: Socket, ms: number) =>
      new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), ms)
        socket.once('close', () => {
          clearTimeout(timer)
          resolve(true)
        })
      })
    // Each holds a keyed create whose body is still arriving: busy, not idle, so none is evicted.
    const head = `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`
    const held = [await open(), await open(), await open()]
    const started = new Promise<void>((resolve) => {
      let seen = 0
      const onRequest = () => {
        if (++seen < held.length) return
        server.app.server.off('request', onRequest)
        resolve()
      }
      server.app.server.on('request', onRequest)
    })
    for (const socket of held) socket.write(head)
    await started // the server has read all three heads: three requests in progress
    const extra = await open()
    const busy = await closedWithin(extra, 2_000)
    try {
      assert.equal(busy, true, 'the fourth connection is closed')
      assert.equal(await closedWithin(held[0] as Socket, 300), false, 'the three busy ones stay open')
    } finally {
      for (const socket of held) socket.destroy()
    }
    // Node counts a connection until its close is processed; poll briefly for the count to drop.
    let status = 0
    for (let attempt = 0; attempt < 20 && status !== 200; attempt++) {
      status = await call(server, 'GET', '/v1/pets')
        .then((response) => response.status)
        .catch(() => 0)
    }
    assert.equal(status, 200)
  })
})
