// No client input grows a process's memory (docs/security.md, "Bounded state"): a `serve` process
// takes 3,000 requests without a key, each with a distinct 15 KB Accept-Encoding (HEADs of the /docs
// assets and the page, GET /healthz), and its resident memory, read from /proc, grows by less than
// 10 MB. SQLite only: no state in question lives in the database.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { freshDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, startServe } from '../support/cli-process.js'

const REQUESTS = 3000
const VALUE_BYTES = 15_000

/** The resident set of process `pid`, in bytes (/proc/PID/status, VmRSS). */
function residentBytes(pid: number): number {
  const kib = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  assert.ok(kib, 'VmRSS in /proc')
  return Number(kib) * 1024
}

/** A distinct content-coding token of VALUE_BYTES for request `i`. */
const distinct = (i: number) => `${String(i).padStart(6, '0')}${'x'.repeat(VALUE_BYTES - 6)}`

describe('memory under distinct 15 KB header values (a real process)', () => {
  const dir = tempDir()
  let server: ServeProcess
  before(async () => {
    assertBuilt()
    const database = await freshDatabase('sqlite', dir.path)
    server = await startServe(
      cliEnv({ DATABASE_URL: database.url, API_KEYS: 'bounded-state-test-key-0123456789abcdef', LOG_LEVEL: 'warn' }),
    )
  })
  after(() => {
    server?.kill()
    killLeftovers()
    dir.remove()
  })

  it(`grows the resident set by under 10 MB over ${REQUESTS} requests, each with its own 15 KB value`, async (t) => {
    const page = await (await fetch(`${server.origin}/docs`)).text()
    const assets = [...page.matchAll(/(?:href|src)="(docs\/[^"]+)"/g)].map((match) => `/${match[1]}`)
    assert.ok(assets.length >= 2, `assets: ${assets}`)
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const targets: Array<{ method: string; path: string; status: number }> = [
      ...assets.map((path) => ({ method: 'HEAD', path, status: 200 })),
      { method: 'HEAD', path: '/docs', status: 200 },
      { method: 'GET', path: '/healthz', status: 200 },
    ]
    // Request `i` goes to one of the targets in turn, with the Accept-Encoding value numbered `numberOf(i)`.
    const send = (i: number, numberOf: (i: number) => number) => {
      const target = targets[i % targets.length] as (typeof targets)[number]
      const value = `br;q=0.5, ${distinct(numberOf(i))}`
      return new Promise<void>((resolve, reject) => {
        request(
          `${server.origin}${target.path}`,
          { method: target.method, agent, headers: { 'accept-encoding': value } },
          (response) => {
            response.resume().on('end', () => {
              if (response.statusCode === target.status) resolve()
              else reject(new Error(`${target.method} ${target.path}: ${response.statusCode}`))
            })
          },
        )
          .on('error', reject)
          .end()
      })
    }
    // First the same requests with one value throughout: the heap grows to what this load needs
    // (lazy compilation, allocator pools, garbage not yet collected), so that what follows counts
    // only what distinct values leave behind.
    for (let i = 0; i < REQUESTS; i++) await send(i, () => REQUESTS)
    const before = residentBytes(server.pid)
    for (let i = 0; i < REQUESTS; i++) await send(i, (i) => i)
    agent.destroy()
    const grownMiB = (residentBytes(server.pid) - before) / 1024 / 1024
    t.diagnostic(`resident set grown by ${grownMiB.toFixed(1)} MiB`)
    assert.ok(grownMiB < 10, `the resident set grew ${grownMiB.toFixed(1)} MiB`)
  })
})
