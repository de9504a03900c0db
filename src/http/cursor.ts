// The opaque keyset cursor of listPets (docs/specification.md, Pagination): the
// base64url of the last `id` returned, so a page continues strictly after it in `id` order.
import { type Int64Text, isInt64 } from '../int64.js'

/** The cursor that continues after the pet with this `id`. */
export function encodeCursor(lastId: Int64Text | bigint): string {
  return Buffer.from(String(lastId), 'utf8').toString('base64url')
}

/**
 * The `id` a cursor continues after, or undefined when `cursor` is not one this service issues
 * (the Ajv format `cursor` uses this, so a bad cursor is reported with every other bad parameter).
 */
export function decodeCursor(cursor: string): bigint | undefined {
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  if (!/^-?(0|[1-9]\d{0,18})$/.test(text) || encodeCursor(BigInt(text)) !== cursor) return undefined
  const id = BigInt(text)
  return isInt64(id) ? id : undefined
}
