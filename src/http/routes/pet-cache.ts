// Pets by id as their JSON, kept by each instance for getPet. The contract has no update or delete
// (docs/specification.md), so a pet, once read, reads the same forever: a get by id it holds costs
// the database nothing, which on PostgreSQL is the one part of a fleet that does not scale out. A
// pet not found is not kept (it may be created next). A kept pet is served only while the database
// answers (Store.answering: its last operation succeeded, and no idle connection was lost since), so
// that an outage answers 503 once the instance has seen it (a statement that failed, a server that
// stopped); a silent one (a host gone without closing its connections) shows when a statement's bound
// runs out. A restore, or a failover that lost commits, hands ids out again to other pets, and every
// instance is restarted after it (docs/operating.md), which empties it.
import type { PetStore } from '../../store/index.js'

/** Most characters of pet JSON kept; past it the cache starts over. docs/security.md states it. */
export const PET_CACHE_CHARS = 2_097_152

/**
 * `findPet` with the pets it found kept by id (as decimal text), up to `maxChars` characters of
 * JSON in all. A kept pet resolves without reading while `servable()` is true; otherwise, or when
 * not kept, it resolves and rejects as `findPet` does (a read that finds no pet drops a kept one).
 */
export function cachingFindPet(
  findPet: PetStore['findPet'],
  servable: () => boolean,
  maxChars = PET_CACHE_CHARS,
): PetStore['findPet'] {
  const kept = new Map<string, string>()
  let chars = 0
  return async (id, atLeast) => {
    const key = String(id)
    const hit = kept.get(key)
    if (hit !== undefined && servable()) return hit
    const body = await findPet(id, atLeast)
    // Read again while the database did not answer: a kept pet it no longer has is dropped.
    if (body === undefined) {
      const dropped = kept.get(key)
      if (dropped !== undefined) {
        kept.delete(key)
        chars -= dropped.length
      }
    } else if (!kept.has(key)) {
      if (chars + body.length > maxChars) {
        kept.clear()
        chars = 0
      }
      kept.set(key, body)
      chars += body.length
    }
    return body
  }
}
