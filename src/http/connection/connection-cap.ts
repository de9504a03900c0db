// MAX_CONNECTIONS without a lockout: past the cap, a connection that serves no one is closed to make
// room, so that no kind of socket held by anyone can keep a client with a key out. In this order:
// one closing lingering (it has had its answer); the one idle longest after a 401 (a client without a
// valid key, kept alive so that its next try costs no new connection); the one whose response has made no write progress
// longest (its client has not taken a byte for SERVER_TIMEOUTS.evictableStall at least); the one
// open longest without sending a request, once silent for SERVER_TIMEOUTS.evictableSilence (a new
// client's request is on its way before that); the one idle longest between requests (a keep-alive
// socket); the one open longest without a request, however briefly. Kept-alive ones come late: their
// clients may send on them at any moment, and closing them first would let silent or stalled
// sockets stay while clients with a key close each other's connections. Only when every open
// connection has a request in progress that is moving is the new one closed at once. The same check
// ends a response stalled for SERVER_TIMEOUTS.connectionTimeout, cap or not.
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { willLinger } from './lingering-close.js'
import { SERVER_TIMEOUTS } from './timeouts.js'
import { hasPendingOutput, writeProgress } from './write-progress.js'

const { connectionTimeout: STALL_LIMIT_MS, evictableStall: EVICTABLE_STALL_MS, evictableSilence: SILENT_MS } = SERVER_TIMEOUTS
const CHECK_INTERVAL_MS = SERVER_TIMEOUTS.connectionsCheckingInterval

// One open connection, linked into exactly one list while it is counted.
interface Connection {
  readonly socket: Socket
  /** Requests in progress (several when pipelined). */
  busy: number
  /** No longer counted: closed, or chosen to make room. */
  gone: boolean
  list: ConnectionList | undefined
  previous: Connection | undefined
  next: Connection | undefined
  /** writeProgress(socket) when last checked (NaN: not yet). */
  progress: number
  /** performance.now() (ms) when it opened, while unused; when its output last moved, while busy. */
  since: number
}

// Connections in the order they joined: a request moving its connection from one list to another
// allocates nothing, where a Set's add and delete on every request reallocated its table now and
// then (a get by id costs about 5 µs less, docs/benchmarks.md).
class ConnectionList {
  first: Connection | undefined
  last: Connection | undefined

  /** Takes `connection` out of the list it is in, if any, and appends it here. */
  add(connection: Connection): void {
    connection.list?.remove(connection)
    connection.list = this
    connection.previous = this.last
    connection.next = undefined
    if (this.last) this.last.next = connection
    else this.first = connection
    this.last = connection
  }

  remove(connection: Connection): void {
    if (connection.list !== this) return
    if (connection.previous) connection.previous.next = connection.next
    else this.first = connection.next
    if (connection.next) connection.next.previous = connection.previous
    else this.last = connection.previous
    connection.list = undefined
    connection.previous = undefined
    connection.next = undefined
  }
}

/**
 * Keeps at most `max` client connections open on `server` (replaces Node's `server.maxConnections`,
 * which refuses the newcomer even when every open connection is idle), and ends responses stalled for
 * SERVER_TIMEOUTS.connectionTimeout. Closing an idle keep-alive connection is allowed at any time
 * (RFC 9112 §9.3.1); clients reopen it. Closing one that is lingering or whose client does not read
 * may reset it, which costs only that client, who already has its answer or is not taking it.
 */
export function capConnections(server: Server, max: number): void {
  let open = 0
  const connections = new WeakMap<Socket, Connection>()
  /** Not yet sent a request (Node closes them at headersTimeout), and between requests. */
  const unused = new ConnectionList()
  const idle = new ConnectionList()
  /** Between requests after a 401: no valid key vouches for the client. */
  const refused = new ConnectionList()
  const lingering = new ConnectionList()
  /** With a request in progress; `stalled`: among them, those whose output has not moved for EVICTABLE_STALL_MS. */
  const busy = new ConnectionList()
  const stalled = new ConnectionList()
  const forget = (connection: Connection) => {
    if (connection.gone) return
    connection.gone = true
    open--
    connection.list?.remove(connection)
  }
  const drop = (connection: Connection) => {
    forget(connection)
    connection.socket.destroy()
  }
  const makeRoom = (): boolean => {
    const choice = lingering.first ?? refused.first ?? stillStalled(stalled, busy) ?? silent(unused) ?? idle.first ?? unused.first
    if (choice) drop(choice)
    return choice !== undefined
  }
  server.on('connection', (socket: Socket) => {
    if (open >= max && !makeRoom()) {
      socket.destroy()
      return
    }
    const connection: Connection = {
      socket,
      busy: 0,
      gone: false,
      list: undefined,
      previous: undefined,
      next: undefined,
      progress: Number.NaN,
      since: performance.now(),
    }
    connections.set(socket, connection)
    open++
    unused.add(connection)
    socket.once('close', () => forget(connection))
  })
  server.on('request', (request, response) => {
    const connection = connections.get(request.socket)
    if (!connection || connection.gone || request.socket.destroyed) return
    if (connection.busy++ === 0) {
      connection.progress = Number.NaN
      busy.add(connection)
    }
    response.once('close', () => {
      if (--connection.busy > 0 || connection.gone || connection.socket.destroyed) return
      ;(willLinger(connection.socket) ? lingering : response.statusCode === 401 ? refused : idle).add(connection)
    })
  })
  watchStalls(server, busy, stalled, drop)
}

/** The connection of `unused` open longest, when it has sent nothing for SILENT_MS (a client sends its request at once). */
function silent(unused: ConnectionList): Connection | undefined {
  const connection = unused.first
  return connection && performance.now() - connection.since >= SILENT_MS ? connection : undefined
}

/**
 * The first connection of `stalled` whose output still has not moved, moving those whose output has
 * since moved back to `busy`; undefined when none is left.
 */
function stillStalled(stalled: ConnectionList, busy: ConnectionList): Connection | undefined {
  for (let connection = stalled.first; connection; connection = stalled.first) {
    if (writeProgress(connection.socket) === connection.progress) return connection
    connection.progress = Number.NaN
    busy.add(connection)
  }
  return undefined
}

/**
 * Every CHECK_INTERVAL_MS while `server` listens: a busy connection whose output has not moved for
 * EVICTABLE_STALL_MS joins `stalled` (where room can be made), one whose output moves again goes back
 * to `busy`, and one stalled for STALL_LIMIT_MS is dropped. Node's own socket timeout would hold such
 * a connection for up to twice its value: it is postponed once when the write queue has changed
 * since the write began, which is always the case once the kernel has taken part of it.
 */
function watchStalls(
  server: Server,
  busy: ConnectionList,
  stalled: ConnectionList,
  drop: (connection: Connection) => void,
): void {
  const check = () => {
    const now = performance.now()
    for (const list of [busy, stalled]) {
      for (let connection = list.first, next: Connection | undefined; connection; connection = next) {
        next = connection.next
        const progress = writeProgress(connection.socket)
        if (progress !== connection.progress || !hasPendingOutput(connection.socket)) {
          connection.progress = progress
          connection.since = now
          if (list === stalled) busy.add(connection)
        } else if (now - connection.since >= STALL_LIMIT_MS) drop(connection)
        else if (list === busy && now - connection.since >= EVICTABLE_STALL_MS) stalled.add(connection)
      }
    }
  }
  let timer: NodeJS.Timeout | undefined
  const start = () => {
    timer ??= setInterval(check, CHECK_INTERVAL_MS).unref()
  }
  if (server.listening) start()
  server.on('listening', start)
  server.on('close', () => {
    clearInterval(timer)
    timer = undefined
  })
}
