// Evicting an API key's oldest Idempotency-Key record (evictOldest, src/store/pet-sql.ts) is one probe of
// idempotency_keys_eviction_order (migration 0008) on both databases: no sort of the key's records, and
// no scan of idempotency_keys_created_at past other keys' older records, even when the key holds most
// of the table (the plan PostgreSQL chose before, at 120 ms a create past 300,000 older records).
// bench/idempotency-records.ts measures it at 1,000,000 records (docs/benchmarks.md).
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import { CompiledQuery, sql } from 'kysely'
import { describeEachDatabase, freshDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { openStore, type Store } from '../../src/store/index.js'
import { compilePetStatements } from '../../src/store/pet-sql.js'

describeEachDatabase('evictOldest', (database) => {
  const dir = tempDir()
  let store: Store
  let drop: () => Promise<void>
  before(async () => {
    const fresh = await freshDatabase(database, dir.path)
    drop = fresh.drop
    store = await openStore(fresh.config)
    await store.migrate()
    // `full` holds four fifths of the records; `other`'s are all older.
    const fill = (scope: string, count: number, since: number) =>
      database === 'postgres'
        ? sql`insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at, pet_id)
            select ${scope}, 'k' || i, 'h', ${since}::bigint + i, 1 from generate_series(1, ${count}::int) i`
        : sql`insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at, pet_id)
            with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})
            select ${scope}, 'k' || i, 'h', ${since} + i, 1 from n`
    await fill('other', 2_000, 1_000).execute(store.db)
    await fill('full', 8_000, 100_000).execute(store.db)
    if (database === 'postgres') await sql`analyze idempotency_keys`.execute(store.db)
  })
  after(async () => {
    await store.close()
    await drop()
    dir.remove()
  })

  it('is one probe of idempotency_keys_eviction_order, with no sort, for a key holding most of the table', async () => {
    const statement = compilePetStatements(database).evictOldest
    const explain = database === 'postgres' ? 'explain (costs off) ' : 'explain query plan '
    const { rows } = await store.db.executeQuery<Record<string, string>>(
      CompiledQuery.raw(explain + statement.sql, statement.bind({ scope: 'full', key: 'k5' })),
    )
    const plan = rows.map((row) => row['QUERY PLAN'] ?? row.detail).join('\n')
    assert.match(plan, /idempotency_keys_eviction_order/, plan)
    assert.doesNotMatch(plan, /TEMP B-TREE|Sort|idempotency_keys_created_at/, plan)
  })

  it('deletes the key’s oldest record other than the one just claimed, and no other key’s', async () => {
    const evicted = await store.db.executeQuery(
      CompiledQuery.raw(
        compilePetStatements(database).evictOldest.sql,
        compilePetStatements(database).evictOldest.bind({ scope: 'full', key: 'k1' }),
      ),
    )
    assert.equal(Number(evicted.numAffectedRows ?? 0), 1)
    const oldest = await store.db
      .selectFrom('idempotency_keys')
      .select(['api_key_id', 'idempotency_key'])
      .where('api_key_id', '=', 'full')
      .orderBy('created_at')
      .limit(2)
      .execute()
    assert.deepEqual(
      oldest.map((row) => row.idempotency_key),
      ['k1', 'k3'],
      'k2, the oldest but the claimed k1, went',
    )
    const others = await store.db
      .selectFrom('idempotency_keys')
      .select(sql<number>`count(*)`.as('n'))
      .where('api_key_id', '=', 'other')
      .executeTakeFirst()
    assert.equal(Number(others?.n), 2_000)
  })
})
