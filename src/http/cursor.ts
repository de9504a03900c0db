// The opaque keyset cursor of listPets (docs/specification.md, Pagination): the
// base64url of the last `id` returned, so a page continues strictly after it in `id` order.
import { INT64_MAX, INT64_MIN } from '../schemas.js'

/** The cursor that continues after the pet with this `id`. */
export function encodeCursor(lastId: bigint): string {
  return Buffer.from(lastId.toString(), 'utf8').toString('base64url')
}

/**
 * The `id` a cursor continues after, or undefined when `cursor` is not one this service issues
 * (the Ajv format `cursor` uses this, so a bad cursor is reported with every other bad parameter).
 */
export function decodeCursor(cursor: string): bigint | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  if (!/^-?(0|[1-9]\d{0,18})$/.test(text) || encodeCursor(BigInt(text)) !== cursor) return undefined
  const id = BigInt(text)
  return id >= INT64_MIN && id <= INT64_MAX ? id : undefined
}
