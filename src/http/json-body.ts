// Request-body JSON parsing that never rounds: int64 values (docs/specification.md, int64) arrive exactly.
// JSON.parse turns 9007199254740993 into …992; lossless-json hands us each number's source text.

import { parse as parseContentType } from 'fast-content-type-parse'
import type { FastifyRequest } from 'fastify'
import { parse } from 'lossless-json'
import { ApiError } from './errors.js'

const PLAIN_INTEGER = /^(?:0|-?[1-9]\d*)$/ // `-0` is not plain: in a body it is read as 0 below; in a path, refused
// Stands for a fractional literal a double would round to an integer: still not an integer, and
// equal to itself (unlike NaN), so an exact repeat of such a member is still one member.
const NOT_AN_INTEGER = 0.5
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
// 19 digits is the most an int64 can have; anything longer is out of range whatever its digits.
const INT64_MAX_DIGITS = 19

/**
 * The exact value of a JSON number literal: a `number` when that is exact (safe integers, and
 * non-integers, which no int64 field accepts anyway), a `bigint` for an integer beyond ±(2^53−1)
 * that could be an int64, and NOT_AN_INTEGER for a literal whose fraction a double would silently
 * drop (`1.00000000000000001`), so that integer validation rejects it instead of rounding it.
 */
export function parseJsonNumber(text: string): number | bigint {
  if (PLAIN_INTEGER.test(text)) return toExactInteger(text)
  const value = Number(text)
  const match = DECIMAL.exec(text)
  if (!match) return value
  const [, sign = '', whole = '', fraction = '', exponent = '0'] = match
  // value = sign · digits · 10^scale, with trailing zeros moved into the scale
  let digits = (whole + fraction).replace(/^0+/, '')
  let scale = Number(exponent) - fraction.length
  const trimmed = digits.replace(/0+$/, '')
  scale += digits.length - trimmed.length
  digits = trimmed
  if (digits === '') return sign ? -0 : 0
  if (scale < 0) return Number.isInteger(value) ? NOT_AN_INTEGER : value
  if (digits.length + scale > INT64_MAX_DIGITS) return value
  return toExactInteger(sign + digits + '0'.repeat(scale))
}

function toExactInteger(text: string): number | bigint {
  const value = Number(text)
  return Number.isSafeInteger(value) ? value : BigInt(text)
}

/**
 * Parses a query or path value declared `type: integer`: a plain decimal integer (no sign `+`, no
 * leading zeros, no spaces, no exponent) becomes a number or, beyond ±(2^53−1), a bigint; any other
 * text is returned unchanged, so schema validation rejects it rather than guessing.
 */
export function parseIntegerText(text: string): string | number | bigint {
  return PLAIN_INTEGER.test(text) ? toExactInteger(text) : text
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

// The charset parameter of a Content-Type (RFC 9110 §8.3.1), quoted values understood; undefined
// when absent or when the header does not parse (the media type check then refuses it).
function contentTypeCharset(header: string): string | undefined {
  try {
    return parseContentType(header).parameters.charset
  } catch {
    return undefined
  }
}

/**
 * Fastify content-type parser for `application/json` (RFC 8259: UTF-8 only). Throws
 * ApiError `unsupported_media_type` for another charset and `invalid_json` for bytes that are not
 * UTF-8 or text that is not JSON (a member name repeated with another value included; an exact
 * repeat is one member, as JSON.parse and lossless-json treat it).
 */
export function parseJsonBody(request: FastifyRequest, body: Buffer): unknown {
  const charset = contentTypeCharset(request.headers['content-type'] ?? '')
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ApiError('unsupported_media_type', { message: 'The request body must be JSON encoded as UTF-8.' })
  }
  let text: string
  try {
    text = utf8.decode(body)
  } catch (cause) {
    throw new ApiError('invalid_json', { message: 'The request body is not valid UTF-8.', cause })
  }
  if (/^[ \t\n\r]*$/.test(text)) throw new ApiError('invalid_request', { message: 'A request body is required.', details: [] })
  try {
    return parse(text, null, parseJsonNumber)
  } catch (cause) {
    const reason = cause instanceof SyntaxError ? `: ${cause.message}` : ''
    throw new ApiError('invalid_json', { message: `The request body is not valid JSON${reason}.`, cause })
  }
}
