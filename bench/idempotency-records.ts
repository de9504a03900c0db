// What one idempotent create costs when its API key already holds many Idempotency-Key records
// (docs/benchmarks.md, "Idempotent creates at 1,000,000 records"): a store (SQLite through the writer
// thread, as `serve` runs it, or a throwaway PostgreSQL) whose key `full` holds RECORDS records and
// `other` OTHER_RECORDS older ones, then sequential creates with new keys for `full`, then creates for
// `other` while `full` creates from 4 callers at once. With --evict the limit is RECORDS, so each create of `full` deletes
// its oldest record (evictOldest); the plan of that statement is printed. Calls the store directly
// (no HTTP), so the figures are the database's part of a create.
// Usage: npx tsx bench/idempotency-records.ts [--database sqlite|postgres] [--records 1000000]
//   [--other-records RECORDS/100] [--creates 200] [--evict]
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { CompiledQuery, sql } from 'kysely'
import { createDatabase, startPostgres } from '../scripts/lib/postgres-server.js'
import { type DatabaseConfig, openStore } from '../src/store/index.js'
import { compilePetStatements } from '../src/store/pet-sql.js'

const { values } = parseArgs({
  options: {
    database: { type: 'string', default: 'sqlite' },
    records: { type: 'string', default: '1000000' },
    creates: { type: 'string', default: '200' },
    'other-records': { type: 'string' },
    evict: { type: 'boolean', default: false },
  },
})
const RECORDS = Number(values.records)
/** Records `other` holds, all older than `full`'s (a key in use for longer, below the limit); RECORDS / 100 unless given. */
const OTHER_RECORDS = Number(values['other-records'] ?? Math.ceil(RECORDS / 100))
const CREATES = Number(values.creates)
/** Without --evict, above RECORDS + every create: no eviction, so each create does the limit check and nothing more. */
const MAX_RECORDS = values.evict ? RECORDS : 10_000_000
const dialect = values.database === 'postgres' ? 'postgres' : 'sqlite'

const dir = mkdtempSync(join(tmpdir(), 'animal-store-idempotency-bench-'))
const postgres = dialect === 'postgres' ? await startPostgres() : undefined
const config: DatabaseConfig = postgres
  ? { dialect: 'postgres', url: (await createDatabase(postgres.url)).url, poolMax: 10, statementTimeoutMs: 60_000 }
  : { dialect: 'sqlite', path: join(dir, 'db.sqlite') }
const store = await openStore(config)

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

// The plan of evictOldest for `full`, as each database gives it.
async function evictionPlan(): Promise<string> {
  const statement = compilePetStatements(dialect).evictOldest
  const explain = dialect === 'postgres' ? 'explain (costs off) ' : 'explain query plan '
  const { rows } = await store.db.executeQuery<Record<string, string>>(
    CompiledQuery.raw(explain + statement.sql, statement.bind({ scope: 'full', key: 'none' })),
  )
  return rows.map((row) => row['QUERY PLAN'] ?? row.detail).join(' | ')
}

try {
  await store.migrate()
  const filled = performance.now()
  // `full`'s records, and `other`'s, all made before them (the oldest in the table).
  const fills = [
    { scope: 'full', count: RECORDS, since: Date.now() },
    { scope: 'other', count: OTHER_RECORDS, since: Date.now() - OTHER_RECORDS - 1 },
  ]
  if (dialect === 'postgres') {
    // The count trigger would update one row a million times: off for this one transaction (the
    // superuser's session_replication_role), and the counts written once.
    await store.db.transaction().execute(async (trx) => {
      await sql`set local session_replication_role = replica`.execute(trx)
      for (const { scope, count, since } of fills) {
        await sql`insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at, pet_id)
          select ${scope}, 'old-' || i, 'f', ${since}::bigint + i, 1 from generate_series(1, ${count}::int) i`.execute(trx)
        await sql`insert into idempotency_key_counts (api_key_id, records) values (${scope}, ${count})`.execute(trx)
      }
    })
    await sql`analyze idempotency_keys`.execute(store.db)
  } else {
    for (const { scope, count, since } of fills) {
      await sql`insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at, pet_id)
        with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})
        select ${scope}, 'old-' || i, 'f', ${since} + i, 1 from n`.execute(store.db)
    }
  }
  console.log(
    `filled ${RECORDS} records for 'full' and ${OTHER_RECORDS} older ones for 'other' in ${Math.round(performance.now() - filled)} ms (${dialect})`,
  )
  console.log(`evictOldest: ${await evictionPlan()}`)
  for (let i = 0; i < 20; i++) await create('other')

  let started = performance.now()
  const full: number[] = []
  for (let i = 0; i < CREATES; i++) full.push(await create('full'))
  console.log(`full, sequential${values.evict ? ', each evicting' : ''}:`, summary(full, performance.now() - started))

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
} finally {
  await store.close()
  await postgres?.destroy()
  rmSync(dir, { recursive: true, force: true })
}
