// Pet rows: insert, list and find, and the row ↔ Pet conversion (snake_case → camelCase, int64 →
// bigint from either driver's representation). docs/specification.md, Pet.
import type { Kysely, Selectable } from 'kysely'
import type { Pet, PetStatus } from '../schemas.js'
import type { Database, PetsTable } from './tables.js'

/** A pet to insert: the validated NewPet with its default applied and `categoryId` exact. */
export interface PetDraft {
  name: string
  categoryId: bigint
  status: PetStatus
}

/** One page of listPets: at most `limit` pets with `id > afterId`, optionally of one status. */
export interface PetPageQuery {
  limit: number
  status?: PetStatus | undefined
  afterId?: bigint | undefined
}

const COLUMNS = ['id', 'name', 'category_id', 'status'] as const

/** Inserts one pet (its own transaction) and resolves to it with its assigned `id` once committed. */
export async function insertPet(db: Kysely<Database>, draft: PetDraft): Promise<Pet> {
  const row = await db
    .insertInto('pets')
    .values({ name: draft.name, category_id: draft.categoryId, status: draft.status })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow()
  return toPet(row)
}

/** One page of pets ordered by `id` ascending (the keyset order of docs/specification.md, Pagination). */
export async function listPets(db: Kysely<Database>, query: PetPageQuery): Promise<Pet[]> {
  let select = db.selectFrom('pets').select(COLUMNS).orderBy('id').limit(query.limit)
  if (query.status !== undefined) select = select.where('status', '=', query.status)
  if (query.afterId !== undefined) select = select.where('id', '>', query.afterId)
  return (await select.execute()).map(toPet)
}

/** The pet with this `id`, or undefined. */
export async function findPet(db: Kysely<Database>, id: bigint): Promise<Pet | undefined> {
  const row = await db.selectFrom('pets').select(COLUMNS).where('id', '=', id).executeTakeFirst()
  return row && toPet(row)
}

function toPet(row: Pick<Selectable<PetsTable>, (typeof COLUMNS)[number]>): Pet {
  return {
    id: BigInt(row.id),
    name: row.name,
    categoryId: BigInt(row.category_id),
    status: row.status as PetStatus,
  }
}
