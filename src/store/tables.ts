// Kysely table types: the database as SQL sees it (snake_case; int64 columns come back as bigint from
// better-sqlite3 in safe-integer mode and as decimal strings from pg). Rows never leave store/.
import type { Generated } from 'kysely'

/** An int64 column as read: bigint (SQLite) or string (PostgreSQL int8); written as bigint or string. */
type Int64Column = bigint | string

/** `pets`: one row per animal. */
export interface PetsTable {
  id: Generated<Int64Column>
  name: string
  category_id: Int64Column
  status: string
}

/**
 * `api_keys`: stored API keys, as SHA-256 hashes only. Timestamps are ISO-8601 UTC text. `scope` is
 * `read` or `write` (migration 0006, default `write`); `rate_limit` the key's own requests per
 * minute, null for the service's default (an integer: bigint from SQLite, number from pg's int4).
 */
export interface ApiKeysTable {
  id: Generated<Int64Column>
  name: string
  prefix: string
  hash: string
  created_at: string
  revoked_at: string | null
  scope: Generated<string>
  rate_limit: number | bigint | null
}

/**
 * `idempotency_keys`: one row per (API key, Idempotency-Key) of createPet: the request's SHA-256,
 * when it was made (ms since the Unix epoch) and the id of the pet it created, written in the pet's
 * transaction (migration 0005; null only inside that transaction).
 */
interface IdempotencyKeysTable {
  api_key_id: string
  idempotency_key: string
  request_hash: string
  created_at: Int64Column
  pet_id: Int64Column | null
}

/**
 * `idempotency_key_counts`: how many `idempotency_keys` rows each API key holds, kept by triggers on
 * that table (migration 0007), so the record limit is read, not counted.
 */
interface IdempotencyKeyCountsTable {
  api_key_id: string
  records: Int64Column
}

/** `service_secrets`: secrets the service made for itself (base64url), by name. Never logged. */
interface ServiceSecretsTable {
  name: string
  value: string
}

/** The whole schema, for `Kysely<Database>`. */
export interface Database {
  pets: PetsTable
  api_keys: ApiKeysTable
  idempotency_keys: IdempotencyKeysTable
  idempotency_key_counts: IdempotencyKeyCountsTable
  service_secrets: ServiceSecretsTable
}
