// One connection to a Redis-protocol server (RESP2) that reads only small replies: a status line, an
// error line, or an array of at most MAX_ITEMS integers, each reply at most MAX_REPLY_BYTES. Anything
// else (a blob, a nested array, a length, an unknown type byte, a reply nobody asked for) drops the
// connection at its first byte that breaks these rules, so a peer can make it hold a few KB at most;
// a command that gets no answer within its timeout drops it too, so a half-read reply never stays.
// It reconnects by itself, waiting longer after each failure (up to RECONNECT_MAX_MS) until a command
// is answered again. Why not a client library: docs/security.md, "The rate-limit store".
import { isIP, connect as plainConnect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'

/** The most bytes one reply may take; a longer one is a protocol violation. */
export const MAX_REPLY_BYTES = 4096
/** The most elements an array reply may have. */
const MAX_ITEMS = 3
/** The most (ms) between two attempts to reconnect. */
const RECONNECT_MAX_MS = 1_000
/** The longest integer accepted, sign included: every safe integer fits; a longer one is a violation. */
const INTEGER = /^-?\d{1,16}$/

/** A reply the connection accepts: a status line's text, or an array of at most MAX_ITEMS integers. */
export type Reply = string | number[]

/** An error reply (`-…`): the server refused the command; the connection stays usable. */
export class ServerError extends Error {}

/** Where to connect, and what to send on each new connection before it is ready. */
export interface RespEndpoint {
  host: string
  port: number
  /** Whether to speak TLS (node:tls, the system's and NODE_EXTRA_CA_CERTS' certificate authorities, the host's name checked). */
  tls: boolean
  /** Commands sent on each new connection (AUTH, SELECT, PING); each must be answered with a status line. */
  handshake: string[][]
  /** The longest (ms) a command may wait for its reply; past it the connection is dropped. */
  timeoutMs: number
  /** The longest (ms) to connect and finish the handshake. */
  connectTimeoutMs: number
}

/** What the connection reports: ready (the handshake answered), or lost (`error` says why; never holds a command's arguments). */
export interface ConnectionEvents {
  connected(): void
  lost(error: Error): void
}

/** A connection that reconnects by itself. */
export interface RespConnection {
  /**
   * Sends `args` (one command) and resolves with its reply. Rejects at once when not ready; with
   * ServerError on an error reply; with an Error when no reply comes within the timeout, on a protocol
   * violation or when the connection is lost (the connection is then dropped and reopened).
   */
  command(args: readonly string[]): Promise<Reply>
  /** Whether the connection is up and its handshake answered. */
  readonly ready: boolean
  /** Drops the connection, rejecting what waits; no reconnect follows, nor any event. */
  close(): void
}

interface Waiting {
  resolve(reply: Reply): void
  reject(error: Error): void
  timer: NodeJS.Timeout
}

/** Why a reply was refused: no details of it beyond its first byte, which a hostile peer chose. */
class ProtocolError extends Error {}

/** RESP2's form of a command: an array of bulk strings. */
function encode(args: readonly string[]): string {
  let text = `*${args.length}\r\n`
  for (const arg of args) text += `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`
  return text
}

const CR = 13
const LF = 10

/** The line at `start` of `data` (without CRLF) and where the next begins; undefined while its CRLF has not arrived. */
function line(data: Buffer, start: number): { text: string; next: number } | undefined {
  const end = data.indexOf(CR, start)
  if (end < 0 || end + 1 >= data.length) return undefined
  if (data[end + 1] !== LF) throw new ProtocolError('a line not ended by CRLF')
  return { text: data.toString('latin1', start, end), next: end + 2 }
}

/**
 * The reply at the start of `data` and its length in bytes, or undefined while it is incomplete.
 * Throws ProtocolError at the first byte that no accepted reply could start with.
 */
function parse(data: Buffer): { reply: Reply | ServerError; length: number } | undefined {
  const type = String.fromCharCode(data[0] as number)
  if (type !== '+' && type !== '-' && type !== '*') throw new ProtocolError(`a reply of type ${JSON.stringify(type)}`)
  const head = line(data, 1)
  if (!head) return undefined
  if (type === '+') return { reply: head.text, length: head.next }
  if (type === '-') return { reply: new ServerError(head.text), length: head.next }
  const count = /^\d$/.test(head.text) ? Number(head.text) : Number.NaN
  if (!(count <= MAX_ITEMS)) throw new ProtocolError('an array longer than expected')
  const items: number[] = []
  let at = head.next
  for (let i = 0; i < count; i++) {
    if (at >= data.length) return undefined
    if (data[at] !== 58 /* : */) throw new ProtocolError('an array item that is not an integer')
    const item = line(data, at + 1)
    if (!item) return undefined
    if (!INTEGER.test(item.text) || !Number.isSafeInteger(Number(item.text))) throw new ProtocolError('an integer out of range')
    items.push(Number(item.text))
    at = item.next
  }
  return { reply: items, length: at }
}

/** Connects to `endpoint` in the background and keeps reconnecting until closed; never throws. */
export function openRespConnection(endpoint: RespEndpoint, events: ConnectionEvents): RespConnection {
  let socket: Socket | undefined
  let ready = false
  let closed = false
  let failures = 0
  let reconnectTimer: NodeJS.Timeout | undefined
  let unread: Buffer = Buffer.alloc(0)
  let waiting: Waiting[] = []

  // Ends the current connection: every command waiting on it is rejected with `error`, which is
  // reported (unless closed) before a new connection is tried.
  const drop = (error: Error) => {
    const dropped = socket
    if (!dropped) return
    socket = undefined
    ready = false
    unread = Buffer.alloc(0)
    const rejected = waiting
    waiting = []
    dropped.destroy()
    for (const each of rejected) {
      clearTimeout(each.timer)
      each.reject(error)
    }
    if (closed) return
    events.lost(error)
    failures++
    reconnectTimer = setTimeout(open, Math.min(50 * failures, RECONNECT_MAX_MS))
  }

  const send = (current: Socket, args: readonly string[]): Promise<Reply> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => drop(new Error(`no reply within ${endpoint.timeoutMs} ms; connection dropped`)),
        endpoint.timeoutMs,
      )
      waiting.push({ resolve, reject, timer })
      current.write(encode(args))
    })

  const receive = (current: Socket, chunk: Buffer) => {
    if (socket !== current) return
    unread = unread.length === 0 ? chunk : Buffer.concat([unread, chunk])
    try {
      while (unread.length > 0) {
        const parsed = parse(unread)
        if (!parsed) break
        if (parsed.length > MAX_REPLY_BYTES) throw new ProtocolError(`a reply longer than ${MAX_REPLY_BYTES} bytes`)
        const answered = waiting.shift()
        if (!answered) throw new ProtocolError('a reply to no command')
        unread = unread.subarray(parsed.length)
        clearTimeout(answered.timer)
        if (parsed.reply instanceof ServerError) answered.reject(parsed.reply)
        else answered.resolve(parsed.reply)
      }
      if (unread.length > MAX_REPLY_BYTES) throw new ProtocolError(`a reply longer than ${MAX_REPLY_BYTES} bytes`)
    } catch (error) {
      const reason = error instanceof ProtocolError ? `the store sent ${error.message}; connection dropped` : String(error)
      drop(new Error(reason))
    }
  }

  function open() {
    reconnectTimer = undefined
    const { host, port } = endpoint
    const current = endpoint.tls
      ? tlsConnect({ host, port, servername: isIP(host) ? undefined : host })
      : plainConnect({ host, port })
    socket = current
    current.setNoDelay(true)
    const deadline = setTimeout(() => {
      if (socket === current) drop(new Error(`not connected within ${endpoint.connectTimeoutMs} ms`))
    }, endpoint.connectTimeoutMs)
    current.on('data', (chunk: Buffer) => receive(current, chunk))
    current.on('error', (error: Error) => {
      if (socket === current) drop(new Error(error.message))
    })
    current.on('close', () => {
      clearTimeout(deadline)
      if (socket === current) drop(new Error('connection closed by the store'))
    })
    current.once(endpoint.tls ? 'secureConnect' : 'connect', async () => {
      try {
        for (const reply of await Promise.all(endpoint.handshake.map((args) => send(current, args)))) {
          if (typeof reply !== 'string') throw new Error('the store answered the handshake with an array')
        }
      } catch (error) {
        if (socket === current)
          drop(error instanceof ServerError ? new Error(`the store refused: ${error.message}`) : (error as Error))
        return
      }
      clearTimeout(deadline)
      if (socket !== current) return
      ready = true
      events.connected()
    })
  }

  open()
  return {
    command(args) {
      const current = socket
      if (!ready || !current) return Promise.reject(new Error('not connected'))
      return send(current, args).then((reply) => {
        failures = 0
        return reply
      })
    },
    get ready() {
      return ready
    },
    close() {
      closed = true
      clearTimeout(reconnectTimer)
      drop(new Error('connection closed'))
    },
  }
}
