// The one place a Pet member meets SQL: which `pets` column each member of the Pet schema
// (src/schemas.ts) is read from. The members and their order come from the schema itself.
import { Pet } from '../schemas.js'
import type { PetsTable } from './tables.js'

/** A member of the Pet representation (`id`, `name`, …), as the schema names it. */
export type PetMember = keyof typeof Pet.properties

/**
 * The `pets` column behind each Pet member. Typed over every schema member, so a member added to
 * the schema without a column here does not compile (and a test checks it at run time too).
 */
export const PET_COLUMNS: { readonly [M in PetMember]: keyof PetsTable } = {
  id: 'id',
  name: 'name',
  categoryId: 'category_id',
  status: 'status',
}

/** The Pet members in the schema's order: the order of the members in every rendered body. */
export const PET_MEMBERS: readonly PetMember[] = Object.keys(Pet.properties) as PetMember[]
