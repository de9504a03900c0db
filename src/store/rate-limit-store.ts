// The shared store of the rate limits (RATE_LIMIT_STORE_URL): a Redis-protocol server (Redis 7,
// Valkey) where every instance and worker leases its share of one budget per client and window with
// one atomic script (docs/deploying.md, "Rate limits on a fleet"), over a connection that reads only
// the script's three small integers (resp-connection.ts). Each reply is checked against the lease
// asked for: one out of bounds is a store failure, as is a store that is down, slow (STORE_TIMEOUT_MS)
// or speaking anything else. The caller then counts in its own memory.
import { createHash } from 'node:crypto'
import { BlockList, isIP } from 'node:net'
import { openRespConnection, type Reply, ServerError } from './resp-connection.js'

/** The longest (ms) a lease may take before the caller counts per process instead. */
export const STORE_TIMEOUT_MS = 250
/** Keys of this service in a store that others may share. */
const KEY_PREFIX = 'animal-store:rate-limit:'
/** The port of a URL that names none (Redis's). */
const DEFAULT_PORT = 6379

// The window is the store's clock's (TIME), so every process agrees on where a window starts. A
// grant never takes the window's count past `limit`, so the fleet as a whole cannot go over; near
// the end of the budget grants shrink (an eighth of what is left), so little is stranded in one
// process's lease while another's runs dry. The key outlives its window by one window, for clocks.
// The total leased it reports is capped at `limit`: a process with a lower limit than the one that
// leased (a rolling change of a key's limit) gets a reply within the bounds leaseOf checks.
const LEASE_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local limit, batch, windowMs = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local window = math.floor(now / windowMs)
local key = KEYS[1] .. ':' .. window
local used = tonumber(redis.call('GET', key) or '0')
local left = limit - used
local granted = 0
if left > 0 then
  granted = math.min(batch, left, math.max(1, math.floor(left / 8)))
  redis.call('INCRBY', key, granted)
  redis.call('PEXPIRE', key, 2 * windowMs)
end
return {granted, math.min(used + granted, limit), (window + 1) * windowMs - now}
`
/** What EVALSHA names the script by. */
const LEASE_SCRIPT_SHA = createHash('sha1').update(LEASE_SCRIPT).digest('hex')

/**
 * What the store granted: `granted` requests (0 = the budget is spent), the window's total leased
 * fleet-wide after this grant (`leased`), and the ms until the store's window ends (`resetMs`).
 */
interface Lease {
  granted: number
  leased: number
  resetMs: number
}

/** The shared store as the limiters use it. */
export interface RateLimitStore {
  /**
   * Leases up to `batch` of `client`'s `limit` in the current window of `windowMs`. Rejects when
   * disconnected (at once), on any store error, after STORE_TIMEOUT_MS, and when the reply is not a
   * lease within `0 ≤ granted ≤ batch`, `0 ≤ leased ≤ limit`, `0 < resetMs ≤ windowMs`.
   */
  lease(client: string, limit: number, batch: number, windowMs: number): Promise<Lease>
  /** Whether the connection is up, so a lease may be tried. */
  readonly connected: boolean
  /** Closes the connection; no reconnect follows. */
  close(): Promise<void>
}

/** What the store's connection reports: it is ready, or it was lost (`error` says why; never holds the URL's password). */
export interface StoreEvents {
  connected(): void
  lost(error: Error): void
}

/** Whether `url` (RATE_LIMIT_STORE_URL, validated) sends its password and replies in clear over a network: redis:// to a host that is not loopback. */
export function inClearOverNetwork(url: string): boolean {
  const { protocol, hostname } = new URL(url)
  return protocol === 'redis:' && !isLoopback(hostname.replace(/^\[|\]$/g, ''))
}

const LOOPBACK = new BlockList()
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4')
LOOPBACK.addAddress('::1', 'ipv6')
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6')

function isLoopback(host: string): boolean {
  const family = isIP(host)
  if (family === 0) return host.toLowerCase() === 'localhost'
  return LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6')
}

/** The lease in `reply` to a request of `batch` of `limit` in a window of `windowMs`; throws unless it is within the bounds RateLimitStore.lease states. */
function leaseOf(reply: Reply, limit: number, batch: number, windowMs: number): Lease {
  const [granted = -1, leased = -1, resetMs = 0] = typeof reply === 'string' ? [] : reply
  if (
    typeof reply === 'string' ||
    reply.length !== 3 ||
    granted < 0 ||
    granted > batch ||
    leased < 0 ||
    leased > limit ||
    resetMs <= 0 ||
    resetMs > windowMs
  ) {
    throw new Error(`the store answered a lease out of bounds: ${JSON.stringify(reply)}`)
  }
  return { granted, leased, resetMs }
}

/** Connects to the store at `url` (RATE_LIMIT_STORE_URL, validated) in the background; never rejects, even when it is unreachable. */
export function openRateLimitStore(url: string, events: StoreEvents): RateLimitStore {
  const { protocol, hostname, port, username, password, pathname } = new URL(url)
  const handshake: string[][] = []
  if (password) handshake.push(['AUTH', ...(username ? [decodeURIComponent(username)] : []), decodeURIComponent(password)])
  if (Number(pathname.slice(1)) > 0) handshake.push(['SELECT', pathname.slice(1)])
  handshake.push(['PING'])
  const connection = openRespConnection(
    {
      host: hostname.replace(/^\[|\]$/g, ''),
      port: Number(port || DEFAULT_PORT),
      tls: protocol === 'rediss:',
      handshake,
      timeoutMs: STORE_TIMEOUT_MS,
      connectTimeoutMs: STORE_TIMEOUT_MS * 4,
    },
    events,
  )
  return {
    async lease(key, limit, batch, windowMs) {
      const args = ['1', KEY_PREFIX + key, String(limit), String(batch), String(windowMs)]
      // The script is sent whole only when the store does not know it yet (a new or restarted store).
      const reply = await connection
        .command(['EVALSHA', LEASE_SCRIPT_SHA, ...args])
        .catch((error: Error) =>
          error instanceof ServerError && error.message.startsWith('NOSCRIPT')
            ? connection.command(['EVAL', LEASE_SCRIPT, ...args])
            : Promise.reject(error),
        )
      return leaseOf(reply, limit, batch, windowMs)
    },
    get connected() {
      return connection.ready
    },
    async close() {
      connection.close()
    },
  }
}
