// Migration 0001 (frozen): the pets table. Valid on SQLite and PostgreSQL; imports no app code.
import { type Kysely, PostgresAdapter, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter
  await db.schema
    .createTable('pets')
    .addColumn('id', postgres ? 'bigint' : 'integer', (column) =>
      postgres ? column.primaryKey().generatedByDefaultAsIdentity() : column.primaryKey().autoIncrement(),
    )
    .addColumn('name', 'text', (column) => column.notNull())
    .addColumn('category_id', 'bigint', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull().check(sql`status in ('available', 'pending', 'sold')`))
    .execute()
  await db.schema.createIndex('pets_status_id').on('pets').columns(['status', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('pets').execute()
}
