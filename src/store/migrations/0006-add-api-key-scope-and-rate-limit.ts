// Migration 0006 (frozen): what a stored key may do. `scope` (`read` or `write`; existing keys, and
// keys a release before this one creates, get `write`, what every key could do until now) and
// `rate_limit` (the key's own requests per minute; null = the service's default). Additive, with a
// default, so the previous release keeps reading and writing api_keys (expand/contract). Valid on
// SQLite and PostgreSQL; imports no app code.
import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  // One column per statement: SQLite's ALTER TABLE adds one at a time. Its CHECK is tested against
  // the rows already there (all get the default).
  await db.schema
    .alterTable('api_keys')
    .addColumn('scope', 'text', (column) => column.notNull().defaultTo('write').check(sql`scope in ('read', 'write')`))
    .execute()
  await db.schema
    .alterTable('api_keys')
    .addColumn('rate_limit', 'integer', (column) => column.check(sql`rate_limit >= 0`))
    .execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('api_keys').dropColumn('rate_limit').execute()
  await db.schema.alterTable('api_keys').dropColumn('scope').execute()
}
