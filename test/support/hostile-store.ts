// A hostile Redis-protocol server for the tests of the rate-limit store (RATE_LIMIT_STORE_URL): it
// answers the handshake (AUTH, SELECT, PING) as Redis does, then the lease script (EVALSHA, EVAL) as
// its mode says: a genuine-looking grant, one that locks a key out, a reply that would make a client
// allocate what it declares, garbage, or nothing. Not a mock of anything we ship: a peer we must
// survive. Each mode's reply is one the 2026-11-28 review sent (docs/security.md, "The rate-limit store").
import { createServer, type Server, type Socket } from 'node:net'

/**
 * What the lease script gets:
 * - `ok`: a grant `[1, 1, 30000]`;
 * - `lockout`: the first lease `[0, 0, 10^12]` (spent, a window ending in 31 years), then grants;
 * - `arrayheader`: `*33554431` (11 bytes: the header of an array of 2^25 − 1 elements), then nothing;
 * - `bigarray`: an array of 30,000,000 integers, streamed as fast as the client reads;
 * - `bigblob`: a 200 MB blob, streamed likewise;
 * - `stuck`: the first lease gets `arrayheader`'s 11 bytes, later ones grants;
 * - `garbage`: a reply of an unknown type, `H`;
 * - `hang`: no answer at all.
 * `setMode({ raw })` answers each lease with `raw` as is instead.
 */
export type HostileMode = 'ok' | 'lockout' | 'arrayheader' | 'bigarray' | 'bigblob' | 'stuck' | 'garbage' | 'hang'

/** The modes the review tried, in the order a test can run them one after another. */
export const REVIEW_MODES: readonly HostileMode[] = ['arrayheader', 'bigarray', 'bigblob', 'stuck', 'lockout', 'garbage', 'hang']

/** A running hostile store. */
export interface HostileStore {
  port: number
  /** `redis://127.0.0.1:PORT` */
  url: string
  /** Switches what leases get, closing every open connection (the client reconnects) and zeroing the counts. */
  setMode(mode: HostileMode | { raw: string }): void
  /** Leases (EVALSHA or EVAL) received since the mode was set. */
  leases(): number
  /** Connections made since the mode was set that the client closed (a timeout or a refused reply drops one). */
  droppedByClient(): number
  /** Writes `text` to every open connection unasked. */
  push(text: string): void
  /** Stops listening and closes every connection. */
  close(): Promise<void>
}

const grant = (granted: number, leased: number, resetMs: number) => `*3\r\n:${granted}\r\n:${leased}\r\n:${resetMs}\r\n`
const ARRAY_HEADER = '*33554431\r\n'

/** Writes `header`, then `piece` until `total` bytes, waiting while the client does not read; stops when it closes. */
async function stream(socket: Socket, header: string, piece: Buffer, total: number): Promise<void> {
  socket.write(header)
  for (let sent = 0; sent < total && !socket.destroyed; sent += piece.length) {
    if (!socket.write(piece)) {
      await new Promise<void>((resolve) => {
        socket.once('drain', resolve)
        socket.once('close', resolve)
      })
    }
  }
}

/**
 * The commands in `data` (RESP arrays of bulk strings, as clients send them), each as its arguments;
 * `rest` is an incomplete command's start.
 */
function commands(data: string): { parsed: string[][]; rest: string } {
  const parsed: string[][] = []
  let at = 0
  for (;;) {
    const header = /^\*(\d+)\r\n/.exec(data.slice(at))
    if (!header) break
    let next = at + header[0].length
    const args: string[] = []
    for (let i = 0; i < Number(header[1]); i++) {
      const length = /^\$(\d+)\r\n/.exec(data.slice(next))
      if (!length || data.length < next + length[0].length + Number(length[1]) + 2) return { parsed, rest: data.slice(at) }
      const start = next + length[0].length
      args.push(data.slice(start, start + Number(length[1])))
      next = start + Number(length[1]) + 2
    }
    parsed.push(args)
    at = next
  }
  return { parsed, rest: data.slice(at) }
}

/** Starts a hostile store on 127.0.0.1:`port` (0: a free one) in mode `ok`; `password`, when given, is the one AUTH accepts. */
export async function startHostileStore(port = 0, password?: string): Promise<HostileStore> {
  let mode: HostileMode | { raw: string } = 'ok'
  let leases = 0
  let dropped = 0
  let firstLease = true
  // Which setMode a connection was accepted under: one closed later counts only in its own mode's figures.
  let epoch = 0
  const sockets = new Set<Socket>()
  const closedByUs = new WeakSet<Socket>()

  const answerLease = (socket: Socket) => {
    leases++
    const first = firstLease
    firstLease = false
    if (typeof mode === 'object') socket.write(mode.raw)
    else if (mode === 'ok') socket.write(grant(1, 1, 30_000))
    else if (mode === 'lockout') socket.write(first ? grant(0, 0, 10 ** 12) : grant(1, 1, 30_000))
    else if (mode === 'arrayheader') socket.write(ARRAY_HEADER)
    else if (mode === 'stuck') socket.write(first ? ARRAY_HEADER : grant(1, 1, 30_000))
    else if (mode === 'garbage') socket.write('H\r\n')
    else if (mode === 'bigarray') void stream(socket, '*30000000\r\n', Buffer.from(':1\r\n'.repeat(16_384)), 30_000_000 * 4)
    else if (mode === 'bigblob') void stream(socket, `$${200 * 1024 * 1024}\r\n`, Buffer.alloc(65_536, 'x'), 200 * 1024 * 1024)
    // hang: nothing
  }

  const server: Server = createServer((socket) => {
    sockets.add(socket)
    const accepted = epoch
    let unread = ''
    socket.on('error', () => {})
    socket.on('close', () => {
      sockets.delete(socket)
      if (!closedByUs.has(socket) && accepted === epoch) dropped++
    })
    socket.on('data', (chunk: Buffer) => {
      const { parsed, rest } = commands(unread + chunk.toString('latin1'))
      unread = rest
      for (const args of parsed) {
        const name = (args[0] ?? '').toUpperCase()
        if (name === 'EVALSHA' || name === 'EVAL') answerLease(socket)
        else if (name === 'PING') socket.write('+PONG\r\n')
        else if (name === 'AUTH' && password !== undefined && args.at(-1) !== password)
          socket.write('-WRONGPASS invalid username-password pair or user is disabled.\r\n')
        else socket.write('+OK\r\n')
      }
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the hostile store has no port')
  const closeAll = () => {
    for (const socket of sockets) {
      closedByUs.add(socket)
      socket.destroy()
    }
  }
  return {
    port: address.port,
    url: `redis://127.0.0.1:${address.port}`,
    setMode(next) {
      closeAll()
      epoch++
      mode = next
      leases = 0
      dropped = 0
      firstLease = true
    },
    leases: () => leases,
    droppedByClient: () => dropped,
    push(text) {
      for (const socket of sockets) socket.write(text)
    },
    async close() {
      closeAll()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
