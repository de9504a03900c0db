// MAX_CONNECTIONS without a lockout: past the cap, the connection that has been idle longest (no
// request in progress: a keep-alive socket between requests, or one that has not sent a full request
// head yet) is closed to make room, so idle sockets held by anyone cannot keep a client with a key
// out. Only when every open connection has a request in progress, or is closing lingering, is the
// new one closed at once.
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { willLinger } from './lingering-close.js'

// One open connection, linked into the idle list while no request is in progress on it.
interface Connection {
  readonly socket: Socket
  /** Requests in progress (several when pipelined). */
  busy: number
  /** No longer counted: closed, or chosen to make room. */
  gone: boolean
  previous: Connection | undefined
  next: Connection | undefined
}

/**
 * Keeps at most `max` client connections open on `server` (replaces Node's `server.maxConnections`,
 * which refuses the newcomer even when every open connection is idle). Closing an idle keep-alive
 * connection is allowed at any time (RFC 9112 §9.3.1); clients reopen it.
 */
export function capConnections(server: Server, max: number): void {
  let open = 0
  const connections = new WeakMap<Socket, Connection>()
  // The idle connections, longest idle first, linked through their records: a request taking its
  // connection out and putting it back allocates nothing, where a Set's add and delete on every
  // request reallocated its table now and then (a get by id costs about 5 µs less, docs/benchmarks.md).
  // A connection closing lingering (at most LINGER_MS, lingering-close.ts) is in no list: closing it
  // with unread bytes would reset it and destroy the answer it is still delivering.
  let first: Connection | undefined
  let last: Connection | undefined
  const isIdle = (connection: Connection) => connection === first || connection.previous !== undefined
  const append = (connection: Connection) => {
    connection.previous = last
    if (last) last.next = connection
    else first = connection
    last = connection
  }
  const unlink = (connection: Connection) => {
    if (!isIdle(connection)) return
    if (connection.previous) connection.previous.next = connection.next
    else first = connection.next
    if (connection.next) connection.next.previous = connection.previous
    else last = connection.previous
    connection.previous = undefined
    connection.next = undefined
  }
  const forget = (connection: Connection) => {
    if (connection.gone) return
    connection.gone = true
    open--
    unlink(connection)
  }
  server.on('connection', (socket: Socket) => {
    if (open >= max) {
      const longestIdle = first
      if (!longestIdle) {
        socket.destroy()
        return
      }
      forget(longestIdle)
      longestIdle.socket.destroy()
    }
    const connection: Connection = { socket, busy: 0, gone: false, previous: undefined, next: undefined }
    connections.set(socket, connection)
    open++
    append(connection)
    socket.once('close', () => forget(connection))
  })
  server.on('request', (request, response) => {
    const connection = connections.get(request.socket)
    if (!connection || request.socket.destroyed) return
    unlink(connection)
    connection.busy++
    response.once('close', () => {
      connection.busy--
      if (connection.busy > 0 || connection.gone || connection.socket.destroyed || willLinger(connection.socket)) return
      append(connection)
    })
  })
}
