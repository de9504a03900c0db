// The Pet and Pets bodies written in the instance from rows of Pet members, for PostgreSQL: there the
// database is the one part of a fleet that does not scale out, so it returns plain rows and each
// instance writes the JSON (SQLite, inside the process, renders its own: pet-sql.ts). The bytes are
// the ones the SQLite statements and Fastify's schema serializer write: members in the Pet schema's
// order, int64 as its exact digits (the driver reads int8 as decimal text), strings as
// JSON.stringify escapes them (test/api/rendered-json.test.ts holds it on both databases).
import { Pet } from '../schemas.js'
import { PET_MEMBERS } from './pet-columns.js'

/** One row of Pet members in PET_MEMBERS order, as the driver reads it: int64 as decimal text, NULL as null. */
export type PetRow = (string | null)[]

/** Where `id` is in a PetRow. */
export const PET_ROW_ID = PET_MEMBERS.indexOf('id')

// What JSON.stringify escapes in a string from the database: a quote, a backslash and the control characters
// (a lone surrogate, which it escapes too, cannot come out of PostgreSQL's UTF-8 text).
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what JSON escapes.
const NEEDS_ESCAPE = /[\u0000-\u001f"\\]/

// JSON.stringify's string, without its call for the strings that need no escape (most names, every
// status): it is the larger part of rendering a page (docs/benchmarks.md).
const jsonString = (value: string) => (NEEDS_ESCAPE.test(value) ? JSON.stringify(value) : `"${value}"`)

// One writer per member, each with its `{"name":` or `,"name":` prefix, chosen once from the schema:
// an int64 member's digits go as they are, any other value as a JSON string.
const MEMBER_WRITERS = PET_MEMBERS.map((member, index) => {
  const prefix = `${index === 0 ? '{' : ','}${JSON.stringify(member)}:`
  const int64 = (Pet.properties[member] as { format?: string }).format === 'int64'
  return int64
    ? (value: string | null) => prefix + (value ?? 'null')
    : (value: string | null) => prefix + (value === null ? 'null' : jsonString(value))
})

/** The Pet JSON of `row`. */
export function petJson(row: PetRow): string {
  let json = ''
  for (let member = 0; member < MEMBER_WRITERS.length; member++)
    json += (MEMBER_WRITERS[member] as (value: string | null) => string)(row[member] ?? null)
  return `${json}}`
}

/** The Pets JSON (a bare array) of the first `count` of `rows`, in their order. */
export function petsJson(rows: readonly PetRow[], count: number): string {
  if (count === 0) return '[]'
  let json = '['
  for (let index = 0; index < count; index++) json += (index === 0 ? '' : ',') + petJson(rows[index] as PetRow)
  return `${json}]`
}
