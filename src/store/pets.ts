// Pets: what the request hot path asks of the database (insert one, list one page, find one) and the
// SQL both dialects share. Rows come back as Pet objects whose int64 columns are decimal text
// (src/int64.ts), so no BigInt is created per row and the digits go into JSON as they are.
import type { Int64Text } from '../int64.js'
import type { Pet, PetStatus } from '../schemas.js'

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

/** The pets a route handler may read and write. Rejects with StoreUnavailableError when transient. */
export interface PetStore {
  /** Inserts one pet and resolves to it, with its assigned `id`, once the row is committed. */
  insertPet(draft: PetDraft): Promise<Pet>
  /** One page ordered by `id` ascending (the keyset order of listPets; docs/specification.md). */
  listPets(query: PetPageQuery): Promise<Pet[]>
  /** The pet with this `id`, or undefined. */
  findPet(id: bigint): Promise<Pet | undefined>
}

/** How a dialect writes an int64 column as decimal text, and a numbered parameter. */
export interface SqlDialect {
  int64Text(column: string): string
  parameter(index: number): string
}

/** The four listPets statements: with or without a status filter, with or without a cursor. */
export type ListVariant = `${'all' | 'status'}-${'first' | 'after'}`

function selection(dialect: SqlDialect): string {
  return `select ${dialect.int64Text('id')} as "id", name as "name", ${dialect.int64Text('category_id')} as "categoryId", status as "status" from pets`
}

/** SQL of one listPets variant; parameters in order: status (if filtered), afterId (if after), limit. */
export function listPetsSql(dialect: SqlDialect, variant: ListVariant): string {
  const [filter, page] = variant.split('-')
  const conditions: string[] = []
  let index = 0
  if (filter === 'status') conditions.push(`status = ${dialect.parameter(++index)}`)
  if (page === 'after') conditions.push(`pets.id > ${dialect.parameter(++index)}`)
  const where = conditions.length > 0 ? ` where ${conditions.join(' and ')}` : ''
  // `pets.id`, not `id`: the selected alias `id` is text, and ordering by it would sort text.
  return `${selection(dialect)}${where} order by pets.id limit ${dialect.parameter(++index)}`
}

/** The variant and its parameters (status, afterId, limit, as present) for a page query. */
export function listPetsVariant(query: PetPageQuery): { variant: ListVariant; parameters: Array<string | bigint | number> } {
  const parameters: Array<string | bigint | number> = []
  if (query.status !== undefined) parameters.push(query.status)
  if (query.afterId !== undefined) parameters.push(query.afterId)
  parameters.push(query.limit)
  const variant: ListVariant = `${query.status !== undefined ? 'status' : 'all'}-${query.afterId !== undefined ? 'after' : 'first'}`
  return { variant, parameters }
}

/** SQL of findPet; one parameter, the id. */
export function findPetSql(dialect: SqlDialect): string {
  return `${selection(dialect)} where pets.id = ${dialect.parameter(1)}`
}

/** The listPets variants, for preparing them all up front. */
export const LIST_VARIANTS: readonly ListVariant[] = ['all-first', 'all-after', 'status-first', 'status-after']

/** The Pet a draft became once stored with `id`. */
export function storedPet(draft: PetDraft, id: Int64Text): Pet {
  return { id, name: draft.name, categoryId: String(draft.categoryId), status: draft.status }
}
