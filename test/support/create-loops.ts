// Create load against a running `serve` for the SQLite file tests: loops of POST /v1/pets whose
// acknowledged ids are recorded, and a wait for the next N acknowledgements.
import assert from 'node:assert/strict'
import { parse } from 'lossless-json'
import { parseJsonNumber } from '../../src/int64.js'
import { type ServeProcess, within } from './cli-process.js'

/** Concurrent create loops. */
const LOOPS = 4

/** Create loops running until `stop()`; `more(n)` resolves once n further creates got their 201. */
export interface Creating {
  more(count: number): Promise<void>
  stop(): Promise<void>
}

/**
 * Creates pets named `LABEL L#I` (categoryId 7) with `key` from LOOPS concurrent loops until `stop()`;
 * every 201's id (decimal text) lands in `acknowledged`. A non-201 fails the loops, `more` and `stop`.
 */
export function createContinuously(server: ServeProcess, key: string, label: string, acknowledged: string[]): Creating {
  let stopped = false
  const waiters = new Set<() => void>()
  const loop = async (l: number) => {
    for (let i = 0; !stopped; i++) {
      const response = await fetch(`${server.origin}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `${label} ${l}#${i}`, categoryId: 7 }),
      })
      const text = await response.text()
      assert.equal(response.status, 201, text)
      acknowledged.push(String((parse(text, null, parseJsonNumber) as { id: unknown }).id))
      for (const wake of waiters) wake()
    }
  }
  const loops = Promise.all(Array.from({ length: LOOPS }, (_, l) => loop(l)))
  // A failed loop fails every wait instead of leaving it pending.
  loops.catch(() => {})
  return {
    more: (count) => {
      const target = acknowledged.length + count
      const reached = new Promise<void>((resolve) => {
        const wake = () => {
          if (acknowledged.length < target) return
          waiters.delete(wake)
          resolve()
        }
        waiters.add(wake)
      })
      return within(Promise.race([reached, loops.then(() => {})]), 15_000, `${count} more creates were not acknowledged`)
    },
    stop: async () => {
      stopped = true
      await loops
    },
  }
}
