// Fleet-wide budgets for the rate limits (RATE_LIMIT_STORE_URL): each process leases small batches
// of a client's budget from the shared store and spends them in memory, so only a request that
// finds its lease empty waits for a round trip; a lease never takes the window past the limit, so
// the fleet never goes over it (docs/deploying.md, "Rate limits on a fleet"). While the store does
// not answer, requests are counted per process instead: one warning per outage, a counter, and a
// new try every STORE_RETRY_MS (and at once on reconnect).
import type { FastifyBaseLogger } from 'fastify'
import type { RateLimitStore, StoreEvents } from '../../store/rate-limit-store.js'
import { type BudgetCounter, type Count, createLocalCounter, WINDOW_MS } from './rate-limit.js'

/** How long (ms) after a failed lease requests are counted per process before the store is tried again. */
export const STORE_RETRY_MS = 1_000
/** The most one lease may take (requests); smaller limits lease 1/LEASE_DIVISOR of the limit, at least 1. */
export const MAX_BATCH = 256
/** A lease asks for this fraction of the limit: small enough that the leases the fleet holds strand little. */
export const LEASE_DIVISOR = 64
/** Refills one request may wait for in a row (others may spend each before it does) before it is counted per process. */
const MAX_REFILLS = 4

/** The shared budgets of one process: a counter per limit, and what the metrics read. */
export interface FleetBudgets {
  /** A counter of API keys' budgets in the shared store (the client is the key's id). */
  counter(): BudgetCounter
  /** Whether the store answered the last time it was asked (the gauge's 1). */
  readonly up: boolean
  /** Requests counted per process so far because the store did not answer. */
  readonly fallbacks: number
  /** Resolves once the store is connected, or after `ms` (never rejects: serving never waits on the store). */
  connected(ms: number): Promise<void>
  close(): Promise<void>
}

/** One process's lease of a client's budget in the current window. `spent`: the store granted none. */
interface Lease {
  remaining: number
  /** The window's total leased fleet-wide when this lease was granted. */
  leased: number
  expiresAt: number
  spent: boolean
}

/** The store's health as the counters see it: whether to try it, and the one warning per outage. */
interface Health extends StoreEvents {
  up: boolean
  fallbacks: number
  usable(time: number): boolean
  failed(error: Error): void
  succeeded(): void
  waiters: Set<() => void>
}

/**
 * Budgets leased from the store `open` connects to (store/rate-limit-store.ts), its troubles logged
 * on `logger`. `now` (ms) is for tests.
 */
export function createFleetBudgets(
  open: (events: StoreEvents) => RateLimitStore,
  logger: FastifyBaseLogger,
  now: () => number = Date.now,
): FleetBudgets {
  const health = storeHealth(logger, now)
  const store = open(health)
  return {
    counter: () => leasingCounter(store, health, now),
    get up() {
      return health.up
    },
    get fallbacks() {
      return health.fallbacks
    },
    async connected(ms) {
      if (store.connected) return
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms)
        health.waiters.add(() => {
          clearTimeout(timer)
          resolve()
        })
      })
    },
    close: () => store.close(),
  }
}

function storeHealth(logger: FastifyBaseLogger, now: () => number): Health {
  let warned = false
  let retryAt = 0
  const health: Health = {
    up: false,
    fallbacks: 0,
    waiters: new Set(),
    usable: (time) => time >= retryAt,
    succeeded() {
      health.up = true
      if (warned) logger.info('rate-limit store reachable again: rate limits are fleet-wide again')
      warned = false
    },
    failed(error) {
      health.up = false
      retryAt = now() + STORE_RETRY_MS
      if (!warned) {
        warned = true
        logger.warn(
          { reason: error.message },
          'rate-limit store unavailable: rate limits are counted per process until it answers again (docs/operating.md)',
        )
      }
    },
    // A connection whose handshake was answered may be tried at once, but only an answered lease ends
    // an outage: a store that accepts connections and then answers leases with garbage stays down,
    // with one warning, however often it is reconnected.
    connected() {
      retryAt = 0
      if (!warned) health.up = true
      for (const wake of health.waiters) wake()
      health.waiters.clear()
    },
    lost: (error) => health.failed(error),
  }
  return health
}

/** Requests one lease asks for: 1/LEASE_DIVISOR of the limit, from 1 to MAX_BATCH. */
const batchOf = (limit: number) => Math.max(1, Math.min(MAX_BATCH, Math.floor(limit / LEASE_DIVISOR)))

/** A new lease of `key`'s budget from the store; undefined (after noting the failure) when it does not answer. */
function lease(store: RateLimitStore, health: Health, key: string, limit: number, now: () => number): Promise<Lease | undefined> {
  return store.lease(key, limit, batchOf(limit), WINDOW_MS).then(
    ({ granted, leased, resetMs }) => {
      health.succeeded()
      return { remaining: granted, leased, expiresAt: now() + resetMs, spent: granted === 0 }
    },
    (error: Error) => {
      health.failed(error)
      return undefined
    },
  )
}

function leasingCounter(store: RateLimitStore, health: Health, now: () => number): BudgetCounter {
  let leases = new Map<string, Lease>()
  let sweepAt = now() + WINDOW_MS
  const pending = new Map<string, Promise<boolean>>()
  const local = createLocalCounter(now)

  // From this process's lease, synchronously: undefined when it has to ask the store.
  const spend = (client: string, limit: number, time: number): Count | undefined => {
    const lease = leases.get(client)
    if (!lease || lease.expiresAt <= time) return undefined
    const resetSeconds = Math.ceil((lease.expiresAt - time) / 1000)
    if (lease.remaining > 0) {
      lease.remaining--
      return { allowed: true, remaining: Math.max(0, limit - lease.leased + lease.remaining), resetSeconds }
    }
    return lease.spent ? { allowed: false, remaining: 0, resetSeconds } : undefined
  }

  const refill = (client: string, limit: number): Promise<boolean> => {
    let waiting = pending.get(client)
    if (!waiting) {
      waiting = lease(store, health, `key:${client}`, limit, now).then((granted) => {
        if (granted) leases.set(client, granted)
        return granted !== undefined
      })
      waiting.finally(() => pending.delete(client))
      pending.set(client, waiting)
    }
    return waiting
  }

  const fallBack = (client: string, limit: number): Count => {
    health.fallbacks++
    return local(client, limit)
  }

  const wait = async (client: string, limit: number): Promise<Count> => {
    for (let attempt = 0; attempt < MAX_REFILLS; attempt++) {
      if (!(await refill(client, limit))) return fallBack(client, limit)
      const count = spend(client, limit, now())
      if (count) return count
    }
    return fallBack(client, limit)
  }

  return (client, limit) => {
    const time = now()
    if (time >= sweepAt) {
      leases = new Map([...leases].filter(([, lease]) => lease.expiresAt > time))
      sweepAt = time + WINDOW_MS
    }
    const count = spend(client, limit, time)
    if (count) return count
    if (!store.connected || !health.usable(time)) return fallBack(client, limit)
    return wait(client, limit)
  }
}
