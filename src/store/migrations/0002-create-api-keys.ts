// Migration 0002 (frozen): the api_keys table (hashes only). Valid on SQLite and PostgreSQL.
import { type Kysely, PostgresAdapter } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('api_keys')
    .addColumn('id', postgres ? 'bigint' : 'integer', (column) =>
      postgres ? column.primaryKey().generatedByDefaultAsIdentity() : column.primaryKey().autoIncrement(),
    )
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('prefix', 'text', (column) => column.notNull())
    .addColumn('hash', 'text', (column) => column.notNull().unique())
    .addColumn('created_at', 'text', (column) => column.notNull())
    .addColumn('revoked_at', 'text')
    .execute()
  await db.schema.createIndex('api_keys_prefix').on('api_keys').column('prefix').execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('api_keys').execute()
}
