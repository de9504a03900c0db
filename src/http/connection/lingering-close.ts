// The lingering close after an early answer (one sent before the request's declared body was read),
// as RFC 9112 §9.6 describes and nginx's lingering_close does: half-close, read and discard for a
// bounded time and byte count, then close. Closing at once with body bytes unread makes the kernel
// reset the connection, and a reset can destroy the answer before the client has read it.
import type { Socket } from 'node:net'

/** Longest time (ms) a connection keeps being read and discarded after an early answer. */
export const LINGER_MS = 2_000
/** Most bytes read and discarded after an early answer; past them the socket is no longer read, and closes at LINGER_MS. */
export const LINGER_BYTES = 1024 * 1024

/**
 * Makes Node's close of `socket` after the current response (the one sent with `Connection: close`:
 * Node calls `socket.destroySoon()` once it is written) a lingering close: send FIN once the response
 * is flushed, then read and discard until the client closes its side, and destroy then or LINGER_MS
 * after at the latest; past LINGER_BYTES the socket is no longer read. Call before the response ends.
 *
 * A client that stops sending once it has the answer (RFC 9112 §9.5; fetch does) never sees a reset; one
 * that sends a longer body regardless reads the whole answer, and its upload is cut after LINGER_MS.
 * The bytes read while lingering never reach Node's HTTP parser, so a request pipelined behind the
 * unread body is never served on a connection whose answering side is already closed. A lingering
 * connection still counts against MAX_CONNECTIONS, and a server close waits for it (LINGER_MS at most).
 */
export function lingerOnClose(socket: Socket): void {
  lingeringSockets.add(socket)
  socket.destroySoon = () => linger(socket)
}

const lingeringSockets = new WeakSet<Socket>()

/** Whether `socket`'s close after its current response lingers (lingerOnClose was called on it). */
export function willLinger(socket: Socket): boolean {
  return lingeringSockets.has(socket)
}

function linger(socket: Socket): void {
  if (socket.destroyed) return
  if (!socket.readable) {
    // Nothing more can arrive: nothing to wait for once the response is out.
    socket.end(() => socket.destroy())
    return
  }
  let discarded = 0
  const close = () => socket.destroy()
  // Past the byte budget the socket stops being read rather than closed: the client, blocked by TCP
  // flow control, still has until LINGER_MS to read the answer and stop sending, and a close now,
  // with its bytes arriving, would be the very reset this avoids.
  const discard = (chunk: Buffer) => {
    discarded += chunk.length
    if (discarded >= LINGER_BYTES) socket.pause()
  }
  // Adding a 'data' listener makes Node's HTTP server hand the socket's bytes to JavaScript (it
  // unconsumes its parser); removing the server's own listener then keeps them from the parser.
  socket.on('data', discard)
  for (const listener of socket.listeners('data')) if (listener !== discard) socket.removeListener('data', listener as never)
  const timer = setTimeout(close, LINGER_MS)
  socket.once('end', close)
  socket.once('close', () => clearTimeout(timer))
  socket.end()
  socket.resume()
}
