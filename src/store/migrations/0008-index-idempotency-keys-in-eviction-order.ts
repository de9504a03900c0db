// Migration 0008 (frozen): an index on idempotency_keys in the order records are evicted in, per API
// key: (api_key_id, created_at, idempotency_key). Deleting a key's oldest record once it holds its
// limit is then one index probe instead of a sort of all that key's records, and no planner can
// prefer scanning idempotency_keys_created_at past other keys' older records (PostgreSQL did, at 120
// ms a create). Additive (expand only): the previous release reads and writes the table as before.
// On PostgreSQL it is built in the migration's transaction (CREATE INDEX CONCURRENTLY cannot run in
// one), which holds off writes to idempotency_keys while it builds; an operator may build it first
// with CONCURRENTLY under this name (docs/deploying.md), and such a build that failed (an invalid
// index) is replaced here. Valid on SQLite and PostgreSQL; imports no app code.
import { type Kysely, PostgresAdapter, sql } from 'kysely'

const INDEX = 'idempotency_keys_eviction_order'

/** Builds the index, replacing an invalid one a failed concurrent build left (PostgreSQL). */
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    const { rows } = await sql<{ valid: boolean }>`select indisvalid as valid from pg_index
      where indexrelid = to_regclass(${INDEX})`.execute(db)
    if (rows[0]?.valid === false) await db.schema.dropIndex(INDEX).execute()
  }
  await db.schema
    .createIndex(INDEX)
    .ifNotExists()
    .on('idempotency_keys')
    .columns(['api_key_id', 'created_at', 'idempotency_key'])
    .execute()
}

/** Drops the index. */
export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex(INDEX).execute()
}
