// Client load through a balancer for the restart tests (stop-signals.test.ts, rolling-restart.test.ts):
// loops of reads and creates that record every answer and every failed request, and a check that each
// acknowledged create was stored exactly once.
import assert from 'node:assert/strict'
import { within } from './cli-process.js'

/** What the clients saw. */
export interface LoadResult {
  /** Answers by status, e.g. `{ '200': 812, '201': 809 }`. */
  statuses: Record<string, number>
  /** Requests that got no answer, by error code (a reset, a refused or closed connection). */
  failures: Record<string, number>
  /** Name → id of every create answered 201. */
  created: Map<string, string>
}

/** Load running until `stop()`. */
export interface Load {
  /** Answers so far. */
  answered(): number
  /** Resolves once `count` more requests have been answered; rejects after 15 s. */
  more(count: number): Promise<void>
  /** Ends the loops (each finishes its request) and resolves with what they saw. */
  stop(): Promise<LoadResult>
}

/**
 * Starts `clients` loops against `origin` (a balancer), each alternating GET /v1/pets?limit=1 and a
 * POST /v1/pets of a pet named `LABEL C#I`, both with `key`, on kept-alive connections. Nothing is
 * retried: a failed request is recorded, and the loop goes on.
 */
export function startLoad(origin: string, key: string, label: string, clients: number): Load {
  const result: LoadResult = { statuses: {}, failures: {}, created: new Map() }
  let answered = 0
  let stopped = false
  const waiters = new Set<() => void>()
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  const count = (record: Record<string, number>, key: string) => {
    record[key] = (record[key] ?? 0) + 1
  }
  const loop = async (client: number) => {
    for (let i = 0; !stopped; i++) {
      const name = `${label} ${client}#${i}`
      try {
        const response =
          i % 2 === 0
            ? await fetch(`${origin}/v1/pets?limit=1`, { headers })
            : await fetch(`${origin}/v1/pets`, { method: 'POST', headers, body: JSON.stringify({ name, categoryId: 7 }) })
        const text = await response.text()
        count(result.statuses, String(response.status))
        if (response.status === 201) result.created.set(name, /"id":(\d+)/.exec(text)?.[1] ?? '')
      } catch (error) {
        const cause = (error as { cause?: NodeJS.ErrnoException }).cause
        count(result.failures, cause?.code ?? String(cause ?? error))
      }
      answered++
      for (const wake of waiters) wake()
    }
  }
  const loops = Promise.all(Array.from({ length: clients }, (_, client) => loop(client)))
  return {
    answered: () => answered,
    more: (wanted) => {
      const target = answered + wanted
      const reached = new Promise<void>((resolve) => {
        const wake = () => {
          if (answered < target) return
          waiters.delete(wake)
          resolve()
        }
        waiters.add(wake)
      })
      return within(reached, 15_000, `${wanted} more requests were not answered`)
    },
    stop: async () => {
      stopped = true
      await loops
      return result
    },
  }
}

/** The answers with a status of 500 or above, by status (`{}` when none). */
export function serverErrors(result: LoadResult): Record<string, number> {
  return Object.fromEntries(Object.entries(result.statuses).filter(([status]) => Number(status) >= 500))
}

/**
 * Fails unless every pet in `created` is listed exactly once, under its id, among the pets whose name
 * starts with `label` (read through `origin`, page by page), and no other such pet exists: no
 * acknowledged create was lost or stored twice, and no unacknowledged one was stored.
 */
export async function assertCreatesStoredOnce(
  origin: string,
  key: string,
  label: string,
  created: Map<string, string>,
): Promise<void> {
  const stored: Array<[string, string]> = []
  let path: string | undefined = '/v1/pets?limit=100'
  while (path) {
    const response: Response = await within(
      fetch(origin + path, { headers: { authorization: `Bearer ${key}` } }),
      10_000,
      `GET ${path} did not answer`,
    )
    const text = await response.text()
    assert.equal(response.status, 200, text)
    for (const match of text.matchAll(/"id":(\d+),"name":"((?:[^"\\]|\\.)*)"/g)) {
      const [, id = '', name = ''] = match
      if (name.startsWith(`${label} `)) stored.push([name, id])
    }
    path = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1]
  }
  assert.equal(new Set(stored.map(([name]) => name)).size, stored.length, 'no create was stored twice')
  assert.deepEqual(new Map(stored), created, 'every acknowledged create is stored, under its id, and nothing else')
}
