// MAX_CONNECTIONS without a lockout: past the cap, the connection that has been idle longest (no
// request in progress: a keep-alive socket between requests, or one that has not sent a full request
// head yet) is closed to make room, so idle sockets held by anyone cannot keep a client with a key
// out. Only when every open connection has a request in progress, or is closing lingering, is the
// new one closed at once.
import type { Server } from 'node:http'
import type { Socket } from 'node:net'
import { willLinger } from './lingering-close.js'

/**
 * Keeps at most `max` client connections open on `server` (replaces Node's `server.maxConnections`,
 * which refuses the newcomer even when every open connection is idle). Closing an idle keep-alive
 * connection is allowed at any time (RFC 9112 §9.3.1); clients reopen it.
 */
export function capConnections(server: Server, max: number): void {
  // Idle sockets in the order they became idle, so the first is the longest idle.
  const idle = new Set<Socket>()
  // Requests in progress per busy socket (several when pipelined).
  const busy = new Map<Socket, number>()
  // Closing lingering (at most LINGER_MS, lingering-close.ts): never closed to make room, since
  // closing one with unread bytes would reset it and destroy the answer it is still delivering.
  const closing = new Set<Socket>()
  const forget = (socket: Socket) => {
    idle.delete(socket)
    busy.delete(socket)
    closing.delete(socket)
  }
  server.on('connection', (socket: Socket) => {
    if (idle.size + busy.size + closing.size >= max) {
      const longestIdle = idle.values().next().value
      if (!longestIdle) {
        socket.destroy()
        return
      }
      forget(longestIdle)
      longestIdle.destroy()
    }
    idle.add(socket)
    socket.once('close', () => forget(socket))
  })
  server.on('request', (request, response) => {
    const socket = request.socket
    if (socket.destroyed) return
    idle.delete(socket)
    busy.set(socket, (busy.get(socket) ?? 0) + 1)
    response.once('close', () => {
      const left = (busy.get(socket) ?? 1) - 1
      if (left > 0) busy.set(socket, left)
      else {
        busy.delete(socket)
        if (socket.destroyed) return
        if (willLinger(socket)) closing.add(socket)
        else idle.add(socket)
      }
    })
  })
}
