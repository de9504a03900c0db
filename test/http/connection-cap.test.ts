// MAX_CONNECTIONS is not a lockout: with the cap held by idle keep-alive sockets (opened without a
// key, on a public route), a client with a key still connects and is served; the longest-idle socket
// makes room for it, never one with a request in progress.
import assert from 'node:assert/strict'
import { connect, type Socket } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'

const CAP = 50

/** A keep-alive socket that has had one `GET /healthz` answered and now sits idle. */
function idleAfterHealthz(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => healthzAgain(socket).then(() => resolve(socket), reject))
  })
}

/** Sends one more `GET /healthz` on `socket`; resolves once it is answered (the socket is idle again). */
function healthzAgain(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = ''
    socket.setEncoding('latin1')
    const onData = (chunk: string) => {
      text += chunk
      if (!/\r\n\r\n\{"status":"ok"\}$/.test(text)) return
      socket.off('data', onData)
      socket.off('error', reject)
      resolve()
    }
    socket.on('data', onData)
    socket.once('error', reject)
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
  })
}

/** Sends `request` on `socket`; resolves once a whole JSON answer has come back on it. */
function answered(socket: Socket, request: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let text = ''
    const onData = (chunk: string) => {
      text += chunk
      const length = Number(/\r\ncontent-length: (\d+)\r\n/i.exec(text)?.[1])
      const body = text.indexOf('\r\n\r\n')
      if (body < 0 || !(text.length - body - 4 >= length)) return
      socket.off('data', onData)
      socket.off('error', reject)
      resolve()
    }
    socket.on('data', onData)
    socket.once('error', reject)
    socket.write(request)
  })
}

/** Which of `sockets` have closed so far (by index), recorded from now on. */
function closings(sockets: Socket[]): Set<number> {
  const closed = new Set<number>()
  for (const [index, socket] of sockets.entries()) socket.on('close', () => closed.add(index))
  return closed
}

describe(`MAX_CONNECTIONS=${CAP} held by idle keep-alive sockets`, () => {
  let server: TestServer
  before(async () => {
    server = await startServer({ maxConnections: CAP })
  })
  after(() => server.close())

  it('still accepts and serves a client with a key, closing the longest-idle socket to make room', async (t) => {
    const port = Number(new URL(server.origin).port)
    const held: Socket[] = []
    for (let i = 0; i < CAP; i++) held.push(await idleAfterHealthz(port))
    const closed = closings(held)
    try {
      const keyed: number[] = []
      for (let i = 0; i < 5; i++) {
        // A new connection each time (fetch's pool would otherwise reuse the first).
        keyed.push((await call(server, 'GET', '/v1/pets?limit=1', { headers: { connection: 'close' } })).status)
      }
      t.diagnostic(`keyed connections accepted with ${CAP} idle sockets held: ${keyed.filter((s) => s === 200).length}/5`)
      assert.deepEqual(keyed, [200, 200, 200, 200, 200])
      // The first keyed connection took the place of the longest-idle socket, the first one opened; a
      // later one took the place the one before it left on closing, or (if that close was not yet
      // seen) the next longest-idle. Either way only the oldest sockets were closed, the rest kept.
      const order = [...closed].sort((a, b) => a - b)
      assert.ok(order.length >= 1 && order.length <= 5, `closed: ${order}`)
      assert.ok(
        order.every((index, i) => index === i),
        `the longest idle were closed: ${order}`,
      )
    } finally {
      for (const socket of held) socket.destroy()
    }
  })

  it("closes a socket kept alive after a 401 before a keyed client's idle one, however long that one idled", async () => {
    const port = Number(new URL(server.origin).port)
    const held: Socket[] = []
    for (let i = 0; i < CAP; i++) held.push(await idleAfterHealthz(port))
    const closed = closings(held)
    const firstClose = new Promise<void>((resolve) => {
      for (const socket of held) socket.once('close', () => resolve())
    })
    try {
      // Socket 0, the longest idle, is a keyed client's; socket 10 then gets a 401 and stays open.
      await answered(held[0] as Socket, `GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\n\r\n`)
      await answered(held[10] as Socket, 'GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\n\r\n')
      const answer = await call(server, 'GET', '/v1/pets?limit=1', { headers: { connection: 'close' } })
      assert.equal(answer.status, 200)
      await firstClose
      assert.deepEqual([...closed], [10])
    } finally {
      for (const socket of held) socket.destroy()
    }
  })

  it('ranks by the last request, not the connection, and never closes one with a request in progress', async () => {
    const port = Number(new URL(server.origin).port)
    const held: Socket[] = []
    for (let i = 0; i < CAP; i++) held.push(await idleAfterHealthz(port))
    const closed = closings(held)
    const firstClose = new Promise<void>((resolve) => {
      for (const socket of held) socket.once('close', () => resolve())
    })
    try {
      // Socket 0, the oldest, starts a create whose body never comes: a request in progress.
      held[0]?.write(
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${server.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{`,
      )
      // Socket 1 is used again, so socket 2 is now the longest idle.
      await healthzAgain(held[1] as Socket)
      const answer = await call(server, 'GET', '/v1/pets?limit=1', { headers: { connection: 'close' } })
      assert.equal(answer.status, 200)
      await firstClose
      assert.deepEqual([...closed], [2])
    } finally {
      for (const socket of held) socket.destroy()
    }
  })
})
