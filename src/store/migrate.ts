// Schema migrations: Kysely's Migrator over a static, ordered list (no file-system discovery, so the
// built dist/ and the TypeScript sources migrate the same way). Kysely holds its migration lock
// (an advisory lock on PostgreSQL), so N instances starting at once migrate exactly once.
import { type Kysely, type Migration, Migrator } from 'kysely'
import * as createPets from './migrations/0001-create-pets.js'
import * as createApiKeys from './migrations/0002-create-api-keys.js'
import * as createIdempotencyKeys from './migrations/0003-create-idempotency-keys.js'
import * as createServiceSecrets from './migrations/0004-create-service-secrets.js'
import * as keepPetIdOfIdempotencyKeys from './migrations/0005-keep-pet-id-of-idempotency-keys.js'

const MIGRATIONS: Record<string, Migration> = {
  '0001-create-pets': createPets,
  '0002-create-api-keys': createApiKeys,
  '0003-create-idempotency-keys': createIdempotencyKeys,
  '0004-create-service-secrets': createServiceSecrets,
  '0005-keep-pet-id-of-idempotency-keys': keepPetIdOfIdempotencyKeys,
}

/**
 * Applies every pending migration in order. Resolves to the names applied (empty when up to date);
 * throws the failing migration's error, naming it, after its transaction rolled back.
 */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => MIGRATIONS } })
  const { error, results = [] } = await migrator.migrateToLatest()
  const failed = results.find((result) => result.status === 'Error')
  if (error && failed) {
    throw new Error(`migration ${failed.migrationName} failed: ${error instanceof Error ? error.message : String(error)}`, {
      cause: error,
    })
  }
  if (error) throw error // before any migration ran: connecting, or reading the migration tables
  return results.filter((result) => result.status === 'Success').map((result) => result.migrationName)
}
