// Pet and Pets response bodies, written straight from stored rows: int64 values as their decimal
// digits (exact; src/int64.ts), the name through JSON.stringify, the status (an enum) as is. The
// bytes are what the Pet and Pets schemas describe (src/schemas.ts): the four members, in order.
import type { Pet } from './schemas.js'

/** The media type sent with these bodies (RFC 8259: JSON is UTF-8). */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** One Pet as JSON text. */
export function petJson(pet: Pet): string {
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId},"status":"${pet.status}"}`
}

/** A Pets array as JSON text. */
export function petsJson(pets: readonly Pet[]): string {
  let json = '['
  for (let i = 0; i < pets.length; i++) json += (i === 0 ? '' : ',') + petJson(pets[i] as Pet)
  return `${json}]`
}
