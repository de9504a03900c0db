// Whether a socket's output is moving: what tells a client that reads its response slowly from one
// that has stopped reading it (its responses then wait on the kernel's full send buffer).
import type { Socket } from 'node:net'

/**
 * A number that changes whenever bytes of `socket`'s output reach the kernel, and stays the same while
 * none do; compare two readings, nothing else (it can go down as well as up).
 *
 * The public counters move only when a whole write completes: `bytesWritten - writableLength` is the
 * bytes of completed writes. A single write can be megabytes (a docs asset) that a slow client takes
 * many seconds to receive, so the bytes of the current write still queued in libuv
 * (`_handle.writeQueueSize`, which Node's own socket timeout reads for the same purpose) are counted
 * too; where the handle has no such count only whole writes count.
 */
export function writeProgress(socket: Socket): number {
  const handle = (socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle
  return socket.bytesWritten - socket.writableLength - (handle?.writeQueueSize ?? 0)
}

/** Whether `socket` has output not yet handed to the kernel (bytes of it wait on the client). */
export function hasPendingOutput(socket: Socket): boolean {
  return socket.writableLength > 0
}
