// The opaque keyset cursor of listPets (SPEC: pagination "not shown"; README "Pagination"): the
// base64url of the last `id` returned, so a page continues strictly after it in `id` order.
import { INT64_MAX, INT64_MIN } from '../schemas.js'
import { ApiError } from './errors.js'

/** The cursor that continues after the pet with this `id`. */
export function encodeCursor(lastId: bigint): string {
  return Buffer.from(lastId.toString(), 'utf8').toString('base64url')
}

/** The `id` a cursor continues after. Throws ApiError `invalid_request` for any other text. */
export function decodeCursor(cursor: string): bigint {
  const text = Buffer.from(cursor, 'base64url').toString('utf8')
  if (/^-?(0|[1-9]\d{0,18})$/.test(text) && encodeCursor(BigInt(text)) === cursor) {
    const id = BigInt(text)
    if (id >= INT64_MIN && id <= INT64_MAX) return id
  }
  throw new ApiError('invalid_request', {
    message: 'The query parameters are not valid; see details.',
    details: [{ in: 'query', field: 'cursor', message: 'is not a cursor this service issued' }],
  })
}
