// What the client's retry tests put between the client and the live service: a forwarding relay
// that records every request and can lose or withhold answers, a free port for one to come up on
// later, and a count of the pets a retried create stored.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, request as forward, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { call, type TestServer } from '../../../../scripts/lib/test-server.js'
import { createKey } from '../../../../src/commands/keys.js'

/** One request that reached the relay, with the status the service answered. */
export interface Attempt {
  method: string
  idempotencyKey: string | undefined
  status: number
  retryAfter: string | undefined
}

/**
 * What the relay does with the first `count` answers: forwards the request and records the answer,
 * then either `drop`s the client's connection (a network that fails after the service acted) or
 * `hold`s the answer, never passing it on (a stalled upstream, which a balancer turns into a 504).
 */
export interface Withheld {
  count: number
  how: 'drop' | 'hold'
}

/**
 * A forwarding relay to `target`; `listen(port)` starts it (0 = any port) and resolves to its port;
 * `close()` ends its connections and resolves once it is closed (at once when it is not listening).
 */
export function relay(
  target: string,
  withheld: Withheld = { count: 0, how: 'drop' },
): { attempts: Attempt[]; server: Server; listen(port: number): Promise<number>; close(): Promise<void> } {
  const attempts: Attempt[] = []
  const server = createServer((incoming, outgoing) => {
    const upstream = forward(
      new URL(incoming.url ?? '/', target),
      { method: incoming.method, headers: incoming.headers },
      (answer) => {
        const status = answer.statusCode ?? 0
        const header = incoming.headers['idempotency-key']
        attempts.push({
          method: incoming.method ?? '',
          idempotencyKey: Array.isArray(header) ? header.join(',') : header,
          status,
          retryAfter: answer.headers['retry-after'],
        })
        if (attempts.length <= withheld.count) {
          answer.resume()
          if (withheld.how === 'drop') outgoing.socket?.destroy()
          return
        }
        outgoing.writeHead(status, answer.headers)
        answer.pipe(outgoing)
      },
    )
    incoming.pipe(upstream)
  })
  return {
    attempts,
    server,
    async listen(port) {
      server.listen(port, '127.0.0.1')
      await once(server, 'listening')
      return (server.address() as AddressInfo).port
    },
    async close() {
      if (!server.listening) return
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

/** A port nothing listens on right now (taken from the OS, then released). */
export async function freePort(): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  probe.close()
  await once(probe, 'close')
  return port
}

/** How many stored pets are named `name` (read with a key of its own, outside any quota in use). */
export async function countNamed(server: TestServer, name: string): Promise<number> {
  const reader = await createKey(server.store.apiKeys, 'reader')
  const response = await call(server, 'GET', '/v1/pets?limit=100', { key: reader.key })
  assert.equal(response.status, 200)
  return response.json.filter((pet: { name: string }) => pet.name === name).length
}
