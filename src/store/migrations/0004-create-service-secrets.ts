// Migration 0004 (frozen): the service_secrets table and its first secret, `cursor` (32 random bytes,
// base64url), the HMAC key that signs listPets cursors. Made once, under the migration lock, so every
// instance and worker on the database loads the same one. Valid on SQLite and PostgreSQL.
import { randomBytes } from 'node:crypto'
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('service_secrets')
    .addColumn('name', 'text', (column) => column.primaryKey())
    .addColumn('value', 'text', (column) => column.notNull())
    .execute()
  await db
    .insertInto('service_secrets')
    .values({ name: 'cursor', value: randomBytes(32).toString('base64url') })
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('service_secrets').execute()
}
