// The rules of an Idempotency-Key claim both dialects' idempotent creates share (sqlite-writes.ts,
// postgres-pets.ts): the outcome of a key another request already claimed, from its stored record,
// and the per-API-key record limit.
import type { IdempotentOutcome } from './pet-store.js'

/** A claimed key's record as read back: the request's fingerprint and the id of the pet it created. */
export interface IdempotencyRecord {
  request_hash: string
  pet_id: bigint | string | null
}

/**
 * The outcome for a key that was already claimed (and not expired): `replayed` with the pet's id
 * when `record` was made by the same request, else `key_reused`. A record without a pet is
 * `in_flight` (the claim and the pet are committed together, so only a reader inside a transaction
 * that has not committed could see one; treated safely all the same).
 */
export function claimedOutcome(record: IdempotencyRecord | undefined, fingerprint: string): IdempotentOutcome {
  if (!record || record.pet_id === null) return { outcome: 'in_flight' }
  if (record.request_hash !== fingerprint) return { outcome: 'key_reused' }
  return { outcome: 'replayed', petId: String(record.pet_id) }
}

/**
 * Whether a scope that just claimed a new record now holds more than `maxRecords` (`records`, what
 * the `held` statement returned; undefined: no count row, none held): its oldest other record is then
 * deleted (`evictOldest`), so storage per API key stays bounded and no create is refused.
 */
export function overRecordLimit(records: number | bigint | string | undefined, maxRecords: number): boolean {
  return Number(records ?? 0) > maxRecords
}
