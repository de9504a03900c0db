// Migration 0003 (frozen): the idempotency_keys table, the stored outcome of each createPet sent
// with an Idempotency-Key, per API key. Valid on SQLite and PostgreSQL; imports no app code.
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('api_key_id', 'text', (column) => column.notNull())
    .addColumn('idempotency_key', 'text', (column) => column.notNull())
    .addColumn('request_hash', 'text', (column) => column.notNull())
    .addColumn('created_at', 'bigint', (column) => column.notNull()) // ms since the Unix epoch
    .addColumn('response_status', 'integer')
    .addColumn('response_location', 'text')
    .addColumn('response_body', 'text')
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['api_key_id', 'idempotency_key'])
    .execute()
  await db.schema.createIndex('idempotency_keys_created_at').on('idempotency_keys').column('created_at').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute()
}
