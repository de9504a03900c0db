// Every migration of the schema, by name in the order they apply: the one list of them. Static (no
// file-system discovery), so the built dist/ and the TypeScript sources migrate the same way. A
// migration, once released, is frozen: a change to the schema is a new file here, never an edit.
import type { Migration } from 'kysely'
import * as createPets from './0001-create-pets.js'
import * as createApiKeys from './0002-create-api-keys.js'
import * as createIdempotencyKeys from './0003-create-idempotency-keys.js'
import * as createServiceSecrets from './0004-create-service-secrets.js'
import * as keepPetIdOfIdempotencyKeys from './0005-keep-pet-id-of-idempotency-keys.js'
import * as addApiKeyScopeAndRateLimit from './0006-add-api-key-scope-and-rate-limit.js'
import * as countIdempotencyRecords from './0007-count-idempotency-records.js'
import * as indexIdempotencyKeysInEvictionOrder from './0008-index-idempotency-keys-in-eviction-order.js'

/** The migrations Kysely's Migrator applies (store/migrate.ts), keyed by name; names sort in apply order. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-create-pets': createPets,
  '0002-create-api-keys': createApiKeys,
  '0003-create-idempotency-keys': createIdempotencyKeys,
  '0004-create-service-secrets': createServiceSecrets,
  '0005-keep-pet-id-of-idempotency-keys': keepPetIdOfIdempotencyKeys,
  '0006-add-api-key-scope-and-rate-limit': addApiKeyScopeAndRateLimit,
  '0007-count-idempotency-records': countIdempotencyRecords,
  '0008-index-idempotency-keys-in-eviction-order': indexIdempotencyKeysInEvictionOrder,
}
