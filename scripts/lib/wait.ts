// Waiting on other processes, for tests and the helpers that start real programs: a deadline on a
// promise, and whether a port on 127.0.0.1 refuses connections (a program not listening yet, or gone).
import { connect } from 'node:net'
import { setTimeout as delay } from 'node:timers/promises'

/** Rejects with `message` after `ms`, unless `promise` settles first. */
export async function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  const timer = new AbortController()
  try {
    return await Promise.race([
      promise,
      delay(ms, undefined, { signal: timer.signal }).then(() => {
        throw new Error(`${message} (after ${ms} ms)`)
      }),
    ])
  } finally {
    timer.abort()
  }
}

/** Whether a new TCP connection to 127.0.0.1:`port` is refused (true) or accepted (false, then closed or reset). */
export function connectionRefused(port: number, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: timeoutMs })
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('timeout', () => {
      socket.destroy()
      reject(new Error(`connecting to port ${port} timed out`))
    })
    socket.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ECONNREFUSED') resolve(true)
      // Accepted into the backlog of a listener that closed before accepting it: not refused (yet).
      else if (error.code === 'ECONNRESET') resolve(false)
      else reject(error)
    })
  })
}
