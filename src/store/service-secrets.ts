// Secrets the service generates for itself and keeps in the database (service_secrets, made by
// migration 0004), so every instance and worker on one database shares them.
import type { Kysely } from 'kysely'
import type { Database } from './tables.js'

/**
 * Names of the stored secrets: `cursor` signs listPets cursors (src/http/routes/cursor.ts) and
 * consistency tokens (src/http/routes/consistency-token.ts).
 */
export type ServiceSecretName = 'cursor'

/** The secret's bytes. Throws when it is missing (the database is not migrated). */
export async function loadServiceSecret(db: Kysely<Database>, name: ServiceSecretName): Promise<Buffer> {
  const row = await db.selectFrom('service_secrets').select('value').where('name', '=', name).executeTakeFirst()
  if (!row) throw new Error(`the service secret "${name}" is missing: run the migrations`)
  return Buffer.from(row.value, 'base64url')
}
