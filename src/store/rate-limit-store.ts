// The shared store of the rate limits (RATE_LIMIT_STORE_URL): a Redis-protocol server (Redis 7,
// Valkey) reached through ioredis, where every instance and worker leases its share of one budget
// per client and window with one atomic script (docs/deploying.md, "Rate limits on a fleet").
// Commands fail fast while disconnected, and give up after STORE_TIMEOUT_MS: the caller then counts
// in its own memory. ioredis reconnects by itself.
import { Redis } from 'ioredis'

/** The longest (ms) a lease may take before the caller counts per process instead. */
export const STORE_TIMEOUT_MS = 250
/** The most (ms) between two attempts to reconnect to a store that went away. */
const RECONNECT_MAX_MS = 1_000
/** Keys of this service in a store that others may share. */
const KEY_PREFIX = 'animal-store:rate-limit:'

// The window is the store's clock's (TIME), so every process agrees on where a window starts. A
// grant never takes the window's count past `limit`, so the fleet as a whole cannot go over; near
// the end of the budget grants shrink (an eighth of what is left), so little is stranded in one
// process's lease while another's runs dry. The key outlives its window by one window, for clocks.
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
return {granted, used + granted, (window + 1) * windowMs - now}
`

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
   * disconnected (at once), on any store error, or after STORE_TIMEOUT_MS.
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

type LeaseCommand = (key: string, limit: number, batch: number, windowMs: number) => Promise<[number, number, number]>

/** Connects to the store at `url` (RATE_LIMIT_STORE_URL) in the background; never rejects, even when it is unreachable. */
export function openRateLimitStore(url: string, events: StoreEvents): RateLimitStore {
  const client = new Redis(url, {
    commandTimeout: STORE_TIMEOUT_MS,
    connectTimeout: STORE_TIMEOUT_MS * 4,
    // Never queue a command while disconnected, nor retry it: the request is counted per process instead.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(50 * attempt, RECONNECT_MAX_MS),
    scripts: { leaseRateLimit: { numberOfKeys: 1, lua: LEASE_SCRIPT } },
  })
  client.on('ready', () => events.connected())
  client.on('error', (error: Error) => events.lost(error))
  client.on('close', () => events.lost(new Error('connection to the rate-limit store closed')))
  const leaseCommand = (client as unknown as { leaseRateLimit: LeaseCommand }).leaseRateLimit.bind(client)
  return {
    async lease(key, limit, batch, windowMs) {
      const [granted, leased, resetMs] = await leaseCommand(KEY_PREFIX + key, limit, batch, windowMs)
      return { granted, leased, resetMs }
    },
    get connected() {
      return client.status === 'ready'
    },
    async close() {
      client.disconnect()
    },
  }
}
