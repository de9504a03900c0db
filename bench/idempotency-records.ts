// What one idempotent create costs when its API key already holds many Idempotency-Key records
// (docs/benchmarks.md, "Idempotent creates at 1,000,000 records"): a SQLite store (the writer thread,
// as `serve` runs it) whose key `full` holds RECORDS records, then sequential creates with new keys
// for `full`, then creates for a nearly empty key `other` while `full` creates from 4 callers at once.
// Calls the store directly (no HTTP), so the figures are the database's part of a create.
// Usage: npx tsx bench/idempotency-records.ts [--records 1000000] [--creates 200]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { sql } from 'kysely'
import { openStore } from '../src/store/index.js'

const { values } = parseArgs({
  options: { records: { type: 'string', default: '1000000' }, creates: { type: 'string', default: '200' } },
})
const RECORDS = Number(values.records)
const CREATES = Number(values.creates)
/** Above RECORDS + every create: no eviction, so each create does the limit check and nothing more. */
const MAX_RECORDS = 10_000_000
const dir = mkdtempSync(join(tmpdir(), 'animal-store-idempotency-bench-'))
const store = await openStore({ dialect: 'sqlite', path: join(dir, 'db.sqlite') })
await store.migrate()

let sequence = 0
/** One create for `scope` with a new Idempotency-Key; resolves to its duration (ms). */
async function create(scope: string): Promise<number> {
  const started = performance.now()
  const outcome = await store.pets.insertPetOnce(
    { name: 'bench', categoryId: 1n, status: 'available' },
    { scope, key: `new-${sequence++}`, fingerprint: 'f', now: Date.now(), expiredBefore: 0, maxRecords: MAX_RECORDS },
  )
  if (outcome.outcome !== 'created') throw new Error(`create: ${outcome.outcome}`)
  return performance.now() - started
}

/** p50 and p99 (ms) and creates per second of `durations` over `elapsedMs`. */
function summary(durations: number[], elapsedMs: number) {
  const sorted = [...durations].sort((a, b) => a - b)
  const at = (q: number) => (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0).toFixed(1)
  return { p50: at(0.5), p99: at(0.99), perSecond: Math.round((durations.length / elapsedMs) * 1000) }
}

const filled = performance.now()
await sql`insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at, pet_id)
  with recursive n(i) as (select 1 union all select i + 1 from n where i < ${RECORDS})
  select 'full', 'old-' || i, 'f', ${Date.now()}, 1 from n`.execute(store.db)
console.log(`filled ${RECORDS} records for 'full' in ${Math.round(performance.now() - filled)} ms`)
for (let i = 0; i < 20; i++) await create('other')

let started = performance.now()
const full: number[] = []
for (let i = 0; i < CREATES; i++) full.push(await create('full'))
console.log('full, sequential:', summary(full, performance.now() - started))

started = performance.now()
const other: number[] = []
let running = true
const busy = Promise.all(
  Array.from({ length: 4 }, async () => {
    while (running) await create('full')
  }),
)
for (let i = 0; i < CREATES; i++) other.push(await create('other'))
running = false
await busy
console.log("other, while 'full' creates from 4 callers:", summary(other, performance.now() - started))
await store.close()
rmSync(dir, { recursive: true, force: true })
