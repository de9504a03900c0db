// Stored API keys: insert, list, look up active hashes, revoke. Only SHA-256 hashes and a short
// display prefix are stored, never a key.
import type { Kysely, Selectable } from 'kysely'
import { isKeyScope, type KeyGrants, type KeyScope } from '../key-grants.js'
import type { ApiKeysTable, Database } from './tables.js'

/**
 * A stored key as operators see it (`keys list`): never the key itself. Times are ISO-8601 UTC;
 * `rateLimit` in requests per minute, undefined for the service's default.
 */
export interface ApiKeyRecord extends KeyGrants {
  id: bigint
  name: string
  prefix: string
  createdAt: string
  revokedAt: string | null
}

/** What the authenticator needs of an active key. `hash` is lowercase hex SHA-256. */
export interface ActiveKeyHash extends KeyGrants {
  id: bigint
  prefix: string
  hash: string
}

/** A key to store: its hash and display prefix (never the key), name, creation time (ISO-8601) and grants. */
export interface NewApiKey extends KeyGrants {
  name: string
  prefix: string
  hash: string
  createdAt: string
}

/** Stores a new key's hash; resolves to its record. */
export async function insertApiKey(db: Kysely<Database>, key: NewApiKey): Promise<ApiKeyRecord> {
  const row = await db
    .insertInto('api_keys')
    .values({
      name: key.name,
      prefix: key.prefix,
      hash: key.hash,
      created_at: key.createdAt,
      scope: key.scope,
      rate_limit: key.rateLimit ?? null,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
  return toRecord(row)
}

/** Every stored key, revoked ones included, by id. */
export async function listApiKeys(db: Kysely<Database>): Promise<ApiKeyRecord[]> {
  return (await db.selectFrom('api_keys').selectAll().orderBy('id').execute()).map(toRecord)
}

/**
 * Id, prefix, hash and grants of every key not revoked; with `afterId`, of those with a larger id only
 * (keys created since).
 */
export async function listActiveKeyHashes(db: Kysely<Database>, afterId?: bigint): Promise<ActiveKeyHash[]> {
  let select = db.selectFrom('api_keys').select(['id', 'prefix', 'hash', 'scope', 'rate_limit']).where('revoked_at', 'is', null)
  if (afterId !== undefined) select = select.where('id', '>', afterId)
  return (await select.execute()).map((row) => ({
    id: BigInt(row.id),
    prefix: row.prefix,
    hash: row.hash,
    scope: toScope(row.scope),
    rateLimit: row.rate_limit === null ? undefined : Number(row.rate_limit),
  }))
}

/** Whether any key was ever stored (revoked ones count): the first start creates one only if not. */
export async function hasAnyApiKey(db: Kysely<Database>): Promise<boolean> {
  return (await db.selectFrom('api_keys').select('id').limit(1).executeTakeFirst()) !== undefined
}

/**
 * Marks a key revoked at `revokedAt` (ISO-8601). Resolves to its record, unchanged if it was
 * already revoked, or undefined when no key has that id.
 */
export async function revokeApiKey(db: Kysely<Database>, id: bigint, revokedAt: string): Promise<ApiKeyRecord | undefined> {
  await db.updateTable('api_keys').set({ revoked_at: revokedAt }).where('id', '=', id).where('revoked_at', 'is', null).execute()
  const row = await db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst()
  return row && toRecord(row)
}

function toRecord(row: Selectable<ApiKeysTable>): ApiKeyRecord {
  return {
    id: BigInt(row.id),
    name: row.name,
    prefix: row.prefix,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
    scope: toScope(row.scope),
    rateLimit: row.rate_limit === null ? undefined : Number(row.rate_limit),
  }
}

// The column's CHECK holds only KEY_SCOPES today; a scope a newer release adds (with its own
// migration) reads as the least one here, so a rolled-back release never grants more than it knows.
function toScope(stored: string): KeyScope {
  return isKeyScope(stored) ? stored : 'read'
}
