// The connection cap stays fair under attack, against `animal-store serve` run as a child process with
// MAX_CONNECTIONS=50: floods of lingering closes, GETs to a public route declaring a body, connections
// whose pipelined responses are never read, and silent connections to the metrics listener each leave
// clients with a key (and the scraper) served, on new connections and on kept-alive ones.
import assert from 'node:assert/strict'
import { Agent, request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { performance } from 'node:perf_hooks'
import { after, before, describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import { tempDir } from '../../scripts/lib/test-server.js'
import { LINGER_MS } from '../../src/http/connection/lingering-close.js'
import { SERVER_TIMEOUTS } from '../../src/http/connection/timeouts.js'
import { METRICS_MAX_CONNECTIONS } from '../../src/http/observability/metrics-server.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, serveMetric, startServe, within } from '../support/cli-process.js'

const KEY = 'connection-cap-attacks-key-0123456789'
const CAP = 50
/** Requests each keyed client makes while an attack runs, one every PACE_MS; at least SERVED of them must get 200. */
const REQUESTS = 40
const PACE_MS = 100
const SERVED = 0.95
/** A keyed request not answered within this counts as not served. */
const REQUEST_TIMEOUT_MS = 3_000
/** Allowance for process scheduling on a busy machine, on top of a timeout and its checking interval. */
const SLACK_MS = 3_000
const { connectionTimeout, evictableStall, connectionsCheckingInterval } = SERVER_TIMEOUTS

/** What one keyed client got: a status per request, 0 for a socket error or no answer in time. */
type Outcomes = number[]

const served = (outcomes: Outcomes) => outcomes.filter((status) => status === 200).length

/** A summary such as `39/40 (ECONNRESET-like 1)` for diagnostics. */
function tally(outcomes: Outcomes): string {
  const counts = new Map<number, number>()
  for (const status of outcomes) counts.set(status, (counts.get(status) ?? 0) + 1)
  return `${served(outcomes)}/${outcomes.length} [${[...counts].map(([status, count]) => `${status || 'error'}×${count}`).join(', ')}]`
}

/** One GET of `url` with `headers` through `agent` (false: a new connection); its status, or 0. */
function get(url: string, headers: Record<string, string>, agent: Agent | false): Promise<number> {
  return new Promise((resolve) => {
    const outgoing = request(url, { agent, headers, timeout: REQUEST_TIMEOUT_MS }, (response) => {
      response.resume()
      response.once('end', () => resolve(response.statusCode ?? 0))
      response.once('error', () => resolve(0))
    })
    outgoing.once('timeout', () => outgoing.destroy(new Error('timed out')))
    outgoing.once('error', () => resolve(0))
    outgoing.end()
  })
}

/** One GET with fetch (undici's own pool of kept-alive connections); its status, or 0. */
async function fetchStatus(url: string, headers: Record<string, string>): Promise<number> {
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })
    await response.arrayBuffer()
    return response.status
  } catch {
    return 0
  }
}

/**
 * Two clients at once, REQUESTS each, one every PACE_MS: one on a new connection every time, one on
 * kept-alive connections (fetch and http.request with a keep-alive agent, in turn; its last request
 * closes its connections, so none outlives the test).
 */
async function twoClients(url: string, headers: Record<string, string>): Promise<{ fresh: Outcomes; keptAlive: Outcomes }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const fresh: Outcomes = []
  const keptAlive: Outcomes = []
  const loop = async (outcomes: Outcomes, once: (i: number) => Promise<number>) => {
    for (let i = 0; i < REQUESTS; i++) {
      outcomes.push(await once(i))
      await delay(PACE_MS)
    }
  }
  await Promise.all([
    loop(fresh, () => get(url, headers, false)),
    loop(keptAlive, (i) => (i % 2 ? fetchStatus(url, headers) : get(url, headers, agent))),
  ])
  await fetchStatus(url, { ...headers, connection: 'close' })
  agent.destroy()
  return { fresh, keptAlive }
}

/** Asserts that each client got at least SERVED of its answers, after reporting them. */
function assertServed(
  outcomes: { fresh: Outcomes; keptAlive: Outcomes },
  attack: string,
  t: { diagnostic(message: string): void },
): void {
  t.diagnostic(`${attack}: new connections ${tally(outcomes.fresh)}, kept alive ${tally(outcomes.keptAlive)}`)
  for (const [kind, each] of Object.entries(outcomes)) {
    assert.ok(served(each) >= SERVED * each.length, `${attack}: ${kind} served ${tally(each)}`)
  }
}

/** An attacker's connection: when it connected, when it closed (once it has). */
interface Held {
  socket: Socket
  connectedAt: number
  closedAt: number | undefined
}

/**
 * Keeps `count` connections to 127.0.0.1:`port`, each started by `begin` once connected, and reopens
 * each as soon as it closes, no sooner than REOPEN_MS after its previous opening and MAX_OPENS in all:
 * an attacker that opens connections as fast as the server frees them. With `halfOpen`, the server's
 * FIN does not close a connection (its client keeps sending). `stop` closes them all.
 */
function flood(port: number, count: number, begin: (socket: Socket) => void, halfOpen = true): { held: Held[]; stop(): void } {
  const REOPEN_MS = 200
  const MAX_OPENS = 1_500
  const held: Held[] = []
  let opens = 0
  let stopped = false
  const open = () => {
    if (stopped || opens >= MAX_OPENS) return
    opens++
    const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: halfOpen })
    const each: Held = { socket, connectedAt: performance.now(), closedAt: undefined }
    held.push(each)
    socket.on('error', () => {})
    socket.once('connect', () => begin(socket))
    socket.once('close', () => {
      each.closedAt = performance.now()
      const wait = Math.max(0, each.connectedAt + REOPEN_MS - each.closedAt)
      setTimeout(open, wait).unref()
    })
  }
  for (let i = 0; i < count; i++) open()
  return {
    held,
    stop() {
      stopped = true
      for (const each of held) each.socket.destroy()
    },
  }
}

/**
 * Sends `head`, reads the answer and then sends one byte every 100 ms, as a body would go on: the
 * server's final close then shows at once (a reset), so that the flood reopens without delay.
 */
function sendAndKeepSending(head: string): (socket: Socket) => void {
  return (socket) => {
    socket.write(head)
    socket.once('data', () => {
      const drip = setInterval(() => socket.writable && socket.write(' '), 100)
      socket.once('close', () => clearInterval(drip))
    })
  }
}

/** Resolves once the service's count of open client connections satisfies `wanted` (polled every 100 ms); rejects after `ms`. */
async function connectionsUntil(
  server: ServeProcess,
  wanted: (open: number) => boolean,
  ms: number,
  what: string,
): Promise<void> {
  const settled = (async () => {
    while (!wanted(await serveMetric(server, 'http_server_connections'))) await delay(100)
  })()
  await within(settled, ms, what)
}

describe(`MAX_CONNECTIONS=${CAP} under attack (\`serve\` as a child process)`, () => {
  const dir = tempDir()
  let server: ServeProcess
  let pets: string
  const auth = { authorization: `Bearer ${KEY}` }

  before(async () => {
    assertBuilt()
    server = await startServe(
      cliEnv({
        DATABASE_URL: `sqlite:${dir.path}/cap.db`,
        API_KEYS: KEY,
        MAX_CONNECTIONS: String(CAP),
        LOG_LEVEL: 'warn',
        // The keyed clients send about 20 requests a second with one key.
        RATE_LIMIT_PER_MINUTE: '0',
      }),
    )
    pets = `${server.origin}/v1/pets?limit=1`
  })

  after(async () => {
    try {
      await server?.stop()
    } finally {
      killLeftovers()
      dir.remove()
    }
  })

  it(`serves keyed clients while ${CAP} connections keep closing lingering (POST without a key, 1 MB declared, reopened at once)`, async (t) => {
    const attack = flood(
      server.port,
      CAP,
      sendAndKeepSending(
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n',
      ),
    )
    try {
      await connectionsUntil(server, (open) => open >= CAP, 5_000, 'the lingering connections did not fill the cap')
      const outcomes = await twoClients(pets, auth)
      t.diagnostic(`the attacker opened ${attack.held.length} connections`)
      assertServed(outcomes, 'lingering flood', t)
    } finally {
      attack.stop()
    }
    await connectionsUntil(server, (open) => open === 0, LINGER_MS + SLACK_MS, 'connections were left open')
  })

  it(`closes at once, without lingering, after a GET or HEAD to a public route that declares a body, and serves keyed clients through a flood of them`, async (t) => {
    const lingered: number[] = []
    let opened = 0
    const attack = flood(server.port, CAP, (socket) => {
      const head = `${opened++ % 2 ? 'HEAD' : 'GET'} /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n`
      sendAndKeepSending(head)(socket)
      socket.once('data', () => {
        const answeredAt = performance.now()
        socket.once('close', () => lingered.push(performance.now() - answeredAt))
      })
    })
    try {
      const outcomes = await twoClients(pets, auth)
      const sorted = [...lingered].sort((a, b) => a - b)
      t.diagnostic(
        `${attack.held.length} connections opened; answer to close: median ${sorted[sorted.length >> 1]?.toFixed(0)} ms, ` +
          `max ${sorted.at(-1)?.toFixed(0)} ms (LINGER_MS ${LINGER_MS})`,
      )
      assertServed(outcomes, 'public GET/HEAD flood', t)
      assert.ok(sorted.length >= CAP, `only ${sorted.length} connections were answered and closed`)
      // Closed as soon as the answer is out (the client's next byte, every 100 ms, meets a reset), never
      // held for LINGER_MS (the slowest within it, for scheduling on a busy machine).
      assert.ok(
        (sorted[sorted.length >> 1] ?? 0) < LINGER_MS / 2,
        `connections were held a median ${sorted[sorted.length >> 1]} ms`,
      )
      assert.ok((sorted.at(-1) ?? 0) < LINGER_MS, `a connection was held ${sorted.at(-1)?.toFixed(0)} ms after its answer`)
    } finally {
      attack.stop()
    }
    await connectionsUntil(server, (open) => open === 0, SLACK_MS, 'connections were left open')
  })

  it(`serves keyed clients while ${CAP} connections never read their pipelined responses, and ends those within connectionTimeout`, async (t) => {
    // Ten pipelined requests for the largest public response, the docs bundle, on each connection. Its
    // reading stops at the first bytes of the answer (so the requests are in progress, no longer idle):
    // the service's writes stop once the kernel's buffers are full.
    const head = 'GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n'.repeat(10)
    const attackers: Socket[] = []
    for (let i = 0; i < CAP; i++) {
      const socket = connect({ port: server.port, host: '127.0.0.1' })
      attackers.push(socket)
      socket.on('error', () => {})
      socket.write(head)
      await within(new Promise((resolve) => socket.once('data', resolve)), 5_000, `attacker ${i} got no answer`)
      socket.pause()
    }
    const lastConnectedAt = performance.now()
    try {
      // Until the service counts the writes as stalled (evictableStall, checked every
      // connectionsCheckingInterval) a newcomer finds no room; then it must always find some.
      const firstServedBound = evictableStall + 2 * connectionsCheckingInterval + SLACK_MS
      const waited = (async () => {
        while ((await get(pets, { ...auth, connection: 'close' }, false)) !== 200) await delay(PACE_MS)
      })()
      await within(waited, firstServedBound, 'no keyed client was served')
      t.diagnostic(`first keyed client served ${(performance.now() - lastConnectedAt).toFixed(0)} ms after the attack`)
      assertServed(await twoClients(pets, auth), 'pipelined unread responses', t)
      // The attacker's connections not closed to make room are ended as stalled: the server's count
      // falls to zero within connectionTimeout of the last one's stall (it stalls within a second).
      const stallBound = connectionTimeout + 2 * connectionsCheckingInterval + SLACK_MS
      const left = Math.max(0, lastConnectedAt + stallBound - performance.now())
      await connectionsUntil(server, (open) => open === 0, left, 'stalled connections were still open')
      const heldFor = performance.now() - lastConnectedAt
      t.diagnostic(`every stalled connection ended ${heldFor.toFixed(0)} ms after the last one opened`)
      assert.ok(heldFor >= connectionTimeout - 2 * connectionsCheckingInterval, `stalled connections ended after ${heldFor} ms`)
    } finally {
      for (const socket of attackers) socket.destroy()
    }
  })

  it(`serves keyed clients and the scraper while ${CAP} idle connections hold the public listener and ${METRICS_MAX_CONNECTIONS} silent ones the metrics listener (reopened at once)`, async (t) => {
    const metricsPort = Number(new URL(server.metricsOrigin ?? '').port)
    // On the public listener every other connection sends nothing, the rest one GET /healthz and then nothing (kept alive).
    let opened = 0
    const idleOrSilent = (socket: Socket) => {
      if (opened++ % 2) socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    }
    const floods = [flood(server.port, CAP, idleOrSilent, false), flood(metricsPort, METRICS_MAX_CONNECTIONS, () => {}, false)]
    try {
      // All of them connected before the first request.
      const connected = () =>
        floods.every((each) => each.held.filter((held) => held.socket.readyState === 'open').length >= 0.9 * each.held.length)
      await within(
        (async () => {
          while (!connected()) await delay(20)
        })(),
        5_000,
        'the silent connections did not connect',
      )
      const [keyed, scraper] = await Promise.all([twoClients(pets, auth), twoClients(`${server.metricsOrigin}/metrics`, {})])
      t.diagnostic(`the attacker opened ${floods[0]?.held.length} and ${floods[1]?.held.length} connections`)
      assertServed(keyed, 'idle and silent connections to the public listener', t)
      assertServed(scraper, 'silent connections to the metrics listener', t)
    } finally {
      for (const each of floods) each.stop()
    }
  })
})
