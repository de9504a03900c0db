// The stages of a graceful shutdown (docs/deploying.md, "Graceful shutdown and rolling deploys"):
// draining (/readyz answers 503 so balancers stop sending, while every request is still served as
// usual), then closing (every response asks its client to reconnect elsewhere, no new connection is
// accepted), then closed (connections still idle are closed, in-flight requests finish).
import { once } from 'node:events'
import { Server as NetServer } from 'node:net'
import { setTimeout as delay, setImmediate } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'

/** Where this instance is in its shutdown; read by /readyz and the request pipeline. */
export interface ShutdownState {
  /** /readyz answers 503: a balancer should stop sending new requests here. */
  draining: boolean
  /** Every response carries `Connection: close`. */
  closing: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The shutdown stage of this app (drain moves it on). */
    shutdown: ShutdownState
  }
}

/**
 * Most time (ms) kept-alive clients get, once no connection is accepted, to take their `Connection:
 * close`; the connections still idle then are closed. A balancer that closes its idle connections
 * sooner never sends on one as it closes (deploy/nginx.conf `keepalive_timeout`).
 */
export const CLOSE_LINGER_MS = 1000

/** Decorates `app` with its ShutdownState; `app.close()` alone (no drain) moves it to closing too. */
export function installShutdownState(app: FastifyInstance): ShutdownState {
  const state: ShutdownState = { draining: false, closing: false }
  app.decorate('shutdown', state)
  app.addHook('preClose', (done) => {
    state.draining = true
    state.closing = true
    done()
  })
  return state
}

/**
 * The first stages of a graceful shutdown of `app`: drains for `drainMs` (readiness false, requests
 * served as usual on kept-alive connections, so none races a closing socket), then stops accepting
 * connections and, once `noLongerAccepted` resolves (under WORKERS, when no worker accepts any
 * longer), asks every client to reconnect elsewhere: kept-alive connections stay open up to
 * CLOSE_LINGER_MS, so a client sending on one gets its answer (with `Connection: close`) rather than
 * a reset; then closes those still idle. Call `app.close()` next: it waits for in-flight requests.
 */
export async function drain(app: FastifyInstance, drainMs: number, noLongerAccepted = async () => {}): Promise<void> {
  app.shutdown.draining = true
  if (drainMs > 0) await delay(drainMs)
  if (!app.server.listening) {
    app.shutdown.closing = true
    return
  }
  // A timer runs before the event loop takes in what arrived since its last turn, and a busy process
  // may be late by many milliseconds: connections waiting to be accepted would be reset by the
  // listener's close, requests already sent on idle connections by their close. So each step waits
  // for the loop's next intake (setImmediate runs right after it) and acts at once.
  await setImmediate()
  // net.Server's own close stops accepting without http.Server's closeIdleConnections(): a client
  // may be writing on an idle kept-alive socket right now. Connections left are counted down here.
  const linger = new AbortController()
  const drained = once(app.server, 'close', { signal: linger.signal })
  NetServer.prototype.close.call(app.server)
  // Asked to reconnect only now, clients find the port closed (refused: nothing sent, a balancer
  // tries another instance) rather than accepted and then closed unanswered.
  await noLongerAccepted()
  app.shutdown.closing = true
  await Promise.race([drained, delay(CLOSE_LINGER_MS, undefined, { signal: linger.signal })]).catch(() => {})
  linger.abort() // whichever came first, the other stops waiting
  await setImmediate()
  // Every response now carries `Connection: close`: no connection becomes idle again after this.
  app.server.closeIdleConnections()
}
