// HTTP clients for the fuzz suites (node:http with raw targets and header values, raw sockets) and the checks every response must pass.
import assert from 'node:assert/strict'
import { Agent, type IncomingHttpHeaders, request } from 'node:http'
import { connect } from 'node:net'
import { parse as parseLossless } from 'lossless-json'
import { assertMatchesContract } from '../../scripts/lib/contract.js'
import { ERROR_CODES } from '../../src/http/errors.js'
import { PET_MEMBERS } from '../../src/store/pet-columns.js'

/** A response as a client saw it. */
export interface Seen {
  status: number
  headers: Headers
  text: string
}

/** One request: `path` is the request target exactly as written on the request line. */
export interface Outgoing {
  method: string
  path: string
  headers?: Record<string, string | string[]>
  body?: string | Buffer
  /** Send the body with `Transfer-Encoding: chunked`, in up to three pieces, instead of Content-Length. */
  chunked?: boolean
}

/** A Pet as the service sent it, int64 values exact. */
export interface ExactPet {
  id: bigint
  name: string
  categoryId: bigint
  status: string
}

/** JSON text parsed with every integer as an exact bigint (other numbers as numbers). */
export function parseExact(text: string): any {
  return parseLossless(text, null, (digits) => (/^-?\d+$/.test(digits) ? BigInt(digits) : Number(digits)))
}

/** A parsed Pet, asserting its exact shape (`text` names where it came from). */
export function toExactPet(pet: any, text: string): ExactPet {
  assert.ok(pet && typeof pet === 'object', `a Pet: ${text}`)
  assert.deepEqual(Object.keys(pet), PET_MEMBERS, `a Pet, its members in the schema order: ${text}`)
  assert.equal(typeof pet.id, 'bigint', `Pet.id is an integer: ${text}`)
  assert.equal(typeof pet.categoryId, 'bigint', `Pet.categoryId is an integer: ${text}`)
  assert.equal(typeof pet.name, 'string', `Pet.name is a string: ${text}`)
  return pet as ExactPet
}

/** The Pet in a 200/201 body, asserting its exact shape. */
export function exactPet(text: string): ExactPet {
  return toExactPet(parseExact(text), text)
}

function toHeaders(raw: IncomingHttpHeaders | Array<[string, string]>): Headers {
  const headers = new Headers()
  const entries = Array.isArray(raw) ? raw : Object.entries(raw)
  for (const [name, value] of entries) {
    for (const item of [value ?? []].flat()) headers.append(name, item)
  }
  return headers
}

/**
 * A client for one server over node:http (keep-alive, at most 8 sockets): unlike fetch it sends the
 * target and latin1 header values exactly as given and can repeat a header (pass an array).
 */
export class HttpClient {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 8 })
  readonly #port: number

  constructor(origin: string) {
    this.#port = Number(new URL(origin).port)
  }

  get port(): number {
    return this.#port
  }

  send(out: Outgoing): Promise<Seen> {
    return new Promise((resolve, reject) => {
      const body = out.body === undefined ? undefined : Buffer.from(out.body)
      // node:http frames a body on its own only for some methods (a GET body would go unframed)
      const framing =
        body === undefined ? {} : out.chunked ? { 'transfer-encoding': 'chunked' } : { 'content-length': String(body.length) }
      const options = { host: '127.0.0.1', port: this.#port, method: out.method, path: out.path, agent: this.#agent }
      const req = request({ ...options, headers: { ...framing, ...out.headers } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('error', reject)
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: toHeaders(res.headers), text: Buffer.concat(chunks).toString('utf8') }),
        )
      })
      req.on('error', reject)
      if (body === undefined) req.end()
      else if (out.chunked) {
        const third = Math.ceil(body.length / 3)
        for (let start = 0; start < body.length; start += Math.max(third, 1)) req.write(body.subarray(start, start + third))
        req.end()
      } else req.end(body)
    })
  }

  close(): void {
    this.#agent.destroy()
  }
}

/** What came back on one raw connection: every complete response, in order, and whether the wait ran out. */
export interface RawResult {
  responses: Seen[]
  timedOut: boolean
}

/** Options of rawExchange. */
export interface RawOptions {
  /** Give up after this long (default 5 s); `timedOut` tells. */
  timeoutMs?: number
  /** Read the responses as answers to HEAD (no bodies). */
  bodiless?: boolean
  /** Half-close (send FIN) right after the bytes instead of waiting for the server to close. */
  halfClose?: boolean
}

/**
 * Writes `bytes` on a fresh TCP connection and collects the responses until the server closes the
 * connection (send `Connection: close`) or the time runs out.
 */
export function rawExchange(port: number, bytes: Buffer, options: RawOptions = {}): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const chunks: Buffer[] = []
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      socket.destroy()
    }, options.timeoutMs ?? 5000)
    socket.on('data', (chunk: Buffer) => chunks.push(chunk))
    socket.on('error', () => {})
    socket.on('close', () => {
      clearTimeout(timer)
      resolve({ responses: parseResponses(Buffer.concat(chunks), options.bodiless), timedOut })
    })
    if (options.halfClose) socket.end(bytes)
    else socket.write(bytes)
  })
}

/** Splits HTTP/1.x response bytes into responses (Content-Length, chunked, or close-delimited bodies; none when `bodiless`, as for HEAD). */
function parseResponses(bytes: Buffer, bodiless = false): Seen[] {
  const responses: Seen[] = []
  let rest = bytes
  while (rest.length > 0) {
    const end = rest.indexOf('\r\n\r\n')
    if (end < 0) break
    const [statusLine = '', ...lines] = rest.subarray(0, end).toString('latin1').split('\r\n')
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? Number.NaN)
    assert.ok(Number.isInteger(status), `a status line: ${JSON.stringify(statusLine)}`)
    const headers = toHeaders(
      lines.map((line) => {
        const colon = line.indexOf(':')
        return [line.slice(0, colon).trim(), line.slice(colon + 1).trim()] as [string, string]
      }),
    )
    rest = rest.subarray(end + 4)
    if (status >= 100 && status < 200) continue
    let body: Buffer = Buffer.alloc(0)
    const length = headers.get('content-length')
    if (bodiless) {
      // a HEAD response: headers only
    } else if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) {
      const parts: Buffer[] = []
      for (;;) {
        const lineEnd = rest.indexOf('\r\n')
        const size = Number.parseInt(rest.subarray(0, lineEnd).toString('latin1'), 16)
        rest = rest.subarray(lineEnd + 2)
        if (!(size > 0)) {
          rest = rest.subarray(rest.indexOf('\r\n') + 2)
          break
        }
        parts.push(rest.subarray(0, size))
        rest = rest.subarray(size + 2)
      }
      body = Buffer.concat(parts)
    } else if (length !== null) {
      body = rest.subarray(0, Number(length))
      rest = rest.subarray(Number(length))
    } else {
      body = rest
      rest = Buffer.alloc(0)
    }
    responses.push({ status, headers, text: body.toString('utf8') })
  }
  return responses
}

/**
 * The checks every response must pass, whatever was sent: never a 5xx; a 2xx/4xx of a documented
 * operation is allowed by openapi.json (status and body schema); every error is `application/json`
 * with the Error body whose `status` is the HTTP status and whose `code` is a catalog code of that
 * status; 401 carries the Bearer challenge, 405 an `Allow`. `contractPath` is the canonical path
 * the request addressed (it may differ from the target as sent).
 */
export function assertWellFormed(method: string, contractPath: string, seen: Seen, what: string): void {
  const where = `${what} → ${seen.status} ${seen.text.slice(0, 300)}`
  assert.ok(seen.status >= 200 && seen.status < 500, `never a 5xx (or a non-final status): ${where}`)
  assertMatchesContract(method, contractPath, seen)
  if (seen.status < 400) return
  assert.match(seen.headers.get('content-type') ?? '', /^application\/json(;|$)/, `an error is JSON: ${where}`)
  if (method !== 'HEAD') {
    let body: any
    assert.doesNotThrow(() => {
      body = JSON.parse(seen.text)
    }, `an error body is JSON: ${where}`)
    assert.ok(body && typeof body === 'object' && !Array.isArray(body), `an Error object: ${where}`)
    for (const key of Object.keys(body))
      assert.ok(['code', 'message', 'status', 'details'].includes(key), `Error has no ${key}: ${where}`)
    const entry = ERROR_CODES[body.code as keyof typeof ERROR_CODES]
    assert.ok(entry, `a catalog code: ${where}`)
    assert.equal(entry.status, seen.status, `code ${body.code} belongs to status ${seen.status}: ${where}`)
    assert.equal(body.status, seen.status, `Error.status repeats the HTTP status: ${where}`)
    assert.ok(typeof body.message === 'string' && body.message.length > 0, `a message: ${where}`)
    if (body.details !== undefined) {
      assert.equal(body.code, 'invalid_request', `details only with invalid_request: ${where}`)
      for (const detail of body.details) {
        assert.ok(['body', 'query', 'path'].includes(detail.in), `detail.in: ${where}`)
        assert.equal(typeof detail.field, 'string')
        assert.equal(typeof detail.message, 'string')
      }
    }
  }
  if (seen.status === 401) {
    assert.match(seen.headers.get('www-authenticate') ?? '', /^Bearer realm="animal-store"/, `401 challenge: ${where}`)
  }
  if (seen.status === 405) assert.match(seen.headers.get('allow') ?? '', /^[A-Z]+(, [A-Z]+)*$/, `405 Allow: ${where}`)
}
