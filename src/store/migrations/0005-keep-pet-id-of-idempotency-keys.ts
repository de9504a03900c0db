// Migration 0005 (frozen): an idempotency record keeps the created pet's id instead of the stored
// response (status, Location, body); a replay reads the pet again. Existing records are converted:
// the id is the last path segment of their stored Location (`…/pets/{id}`); records without a
// response (none outside an uncommitted transaction) are deleted. Valid on SQLite and PostgreSQL.
import type { Kysely } from 'kysely'

const CONVERT_BATCH = 500

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('idempotency_keys').addColumn('pet_id', 'bigint').execute()
  await db.deleteFrom('idempotency_keys').where('response_location', 'is', null).execute()
  for (;;) {
    const rows = await db
      .selectFrom('idempotency_keys')
      .select(['api_key_id', 'idempotency_key', 'response_location'])
      .where('pet_id', 'is', null)
      .limit(CONVERT_BATCH)
      .execute()
    if (rows.length === 0) break
    for (const row of rows) {
      const location = String(row.response_location)
      const id = location.slice(location.lastIndexOf('/') + 1)
      const where = db
        .updateTable('idempotency_keys')
        .where('api_key_id', '=', row.api_key_id)
        .where('idempotency_key', '=', row.idempotency_key)
      // A Location that does not end in an id cannot be replayed: the record goes.
      if (/^-?\d{1,19}$/.test(id)) await where.set({ pet_id: id }).execute()
      else
        await db
          .deleteFrom('idempotency_keys')
          .where('api_key_id', '=', row.api_key_id)
          .where('idempotency_key', '=', row.idempotency_key)
          .execute()
    }
  }
  // One column per statement: SQLite's ALTER TABLE drops one at a time.
  for (const column of ['response_status', 'response_location', 'response_body']) {
    await db.schema.alterTable('idempotency_keys').dropColumn(column).execute()
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  // The responses cannot be rebuilt here (the body is the pet's, read by the service): records go.
  await db.deleteFrom('idempotency_keys').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('response_status', 'integer').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('response_location', 'text').execute()
  await db.schema.alterTable('idempotency_keys').addColumn('response_body', 'text').execute()
  await db.schema.alterTable('idempotency_keys').dropColumn('pet_id').execute()
}
