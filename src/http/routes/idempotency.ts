// Idempotent createPet (the IETF httpapi draft "The Idempotency-Key HTTP Header Field"): the header's
// schema, the request fingerprint, how long keys are kept, and which outcomes are refusals. The
// record itself (fingerprint and pet id) is written by the store in the pet's transaction
// (PetStore.insertPetOnce); a replay answers as a first create does (http/routes/pets.ts).
import { createHash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { Int64Text } from '../../int64.js'
import { NEW_PET_MEMBERS, type NewPetMember } from '../../schemas.js'
import type { IdempotentOutcome, PetDraft } from '../../store/index.js'
import { ApiError } from '../errors.js'

/** How long a key is kept (ms): 24 h after the first request; then the key may be used anew. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000

/** Longest Idempotency-Key accepted, in characters. */
const IDEMPOTENCY_KEY_MAX_LENGTH = 255

/**
 * The request headers createPet reads: an optional `Idempotency-Key` of 1–255 visible ASCII
 * characters (a UUID is typical; the draft's quoted Structured Field string is accepted too, quotes
 * and all, as the exact key). Anything else is a 400 `invalid_request` naming the header.
 */
export const IdempotencyHeaders = Type.Object({
  'Idempotency-Key': Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: IDEMPOTENCY_KEY_MAX_LENGTH,
      pattern: '^[\\x21-\\x7E]*$',
      'x-pattern-message': 'must be visible ASCII characters only (no spaces)',
      description: `Makes the create safe to retry: a retry with the same key and the same body within ${IDEMPOTENCY_KEY_TTL_MS / 3_600_000} h returns the first response (201, same body and Location) and adds no animal. 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters, scoped to the API key; a random UUID per logical create is a good choice.`,
    }),
  ),
})

/**
 * The NewPet members of interface 1.0.0, which every fingerprint starts with as bare values. Frozen:
 * a member added to NewPet later enters a fingerprint as a `[member, value]` pair, and only when the
 * request sends it, so a retry that does not use it replays across the upgrade that added it.
 */
const FIRST_MEMBERS: readonly NewPetMember[] = ['name', 'categoryId', 'status']

/**
 * The fingerprint of a create: SHA-256 (hex) of a JSON array of the validated NewPet with its
 * default applied, every member from the schema (NEW_PET_MEMBERS): the members of FIRST_MEMBERS as
 * values in that order, then each other member present as a `[member, value]` pair in schema order;
 * int64 values as decimal text. So member order, spelling of numbers (`1`, `1.0`, `1e0`) and an
 * explicit default status do not make it another request, and no member can be left out of it.
 */
export function fingerprintOf(draft: PetDraft): string {
  const values = draft as Record<NewPetMember, unknown>
  const canonical = (member: NewPetMember) => {
    const value = values[member]
    return typeof value === 'bigint' ? String(value) : value
  }
  const added = NEW_PET_MEMBERS.filter((member) => !FIRST_MEMBERS.includes(member) && values[member] != null)
  return createHash('sha256')
    .update(JSON.stringify([...FIRST_MEMBERS.map(canonical), ...added.map((member) => [member, canonical(member)])]))
    .digest('hex')
}

/**
 * The id of the pet the first request with this key created, for a replay; or the ApiError to
 * throw: 409 `idempotency_key_in_flight`, 422 `idempotency_key_reused`.
 */
export function replayedPetId(outcome: Exclude<IdempotentOutcome, { outcome: 'created' }>): Int64Text {
  if (outcome.outcome === 'replayed') return outcome.petId
  if (outcome.outcome === 'in_flight') throw new ApiError('idempotency_key_in_flight', { headers: { 'retry-after': '1' } })
  throw new ApiError('idempotency_key_reused')
}
