// Pets on PostgreSQL: named prepared statements (parsed and planned once per pooled connection) sent
// straight through the pg pool, with int8 columns read as decimal text.
import type pg from 'pg'
import type { Pet } from '../schemas.js'
import {
  findPetSql,
  LIST_VARIANTS,
  type ListVariant,
  listPetsSql,
  listPetsVariant,
  type PetStore,
  type SqlDialect,
  storedPet,
} from './pets.js'

const POSTGRES: SqlDialect = { int64Text: (column) => `pets.${column}::text`, parameter: (index) => `$${index}` }

const FIND_PET = findPetSql(POSTGRES)
const INSERT_PET = 'insert into pets (name, category_id, status) values ($1, $2, $3) returning id::text as "id"'
const LIST_PETS = new Map<ListVariant, string>(LIST_VARIANTS.map((variant) => [variant, listPetsSql(POSTGRES, variant)]))

/** A PetStore over a pg pool. Rejects with the driver's error as raised (store/index.ts classifies it). */
export function postgresPetStore(pool: pg.Pool): PetStore {
  return {
    insertPet: async (draft) => {
      const { rows } = await pool.query<{ id: string }>({
        name: 'insert_pet',
        text: INSERT_PET,
        values: [draft.name, String(draft.categoryId), draft.status],
      })
      return storedPet(draft, (rows[0] as { id: string }).id)
    },
    listPets: async (query) => {
      const { variant, parameters } = listPetsVariant(query)
      const values = parameters.map((value) => (typeof value === 'bigint' ? String(value) : value))
      return (await pool.query<Pet>({ name: `list_pets_${variant}`, text: LIST_PETS.get(variant) as string, values })).rows
    },
    findPet: async (id) => (await pool.query<Pet>({ name: 'find_pet', text: FIND_PET, values: [String(id)] })).rows[0],
  }
}
