// The outcome of an Idempotency-Key that another request already claimed, from its stored record:
// the one rule both dialects' idempotent creates share (sqlite-writes.ts, postgres-pets.ts).
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
