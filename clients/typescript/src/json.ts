// JSON text ⇄ values without rounding: int64 members (INT64_FIELDS, generated from openapi.json)
// are read and written as bigint, since JSON.parse rounds integers past 2^53.
import { isLosslessNumber, parse, stringify } from 'lossless-json'
import { INT64_FIELDS } from './generated/int64-fields.js'

/**
 * Parses a response body: members named in INT64_FIELDS (`id`, `categoryId`) become bigint with
 * their exact digits; every other number becomes a JS number. Throws SyntaxError on invalid JSON.
 */
export function parseJson(text: string): unknown {
  return parse(text, (key, value) => {
    if (!isLosslessNumber(value)) return value
    return INT64_FIELDS.has(key) ? BigInt(value.value) : value.valueOf()
  })
}

/** Serializes a request body: bigint values are written as their exact decimal digits. */
export function stringifyJson(value: unknown): string {
  const text = stringify(value)
  if (text === undefined) throw new TypeError('the request body cannot be written as JSON')
  return text
}
