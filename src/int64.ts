// Signed 64-bit integers (`format: int64`: a pet's `id` and `categoryId`, the `petId` path parameter,
// the cursor's id), exact over the whole range in both directions (docs/specification.md, int64;
// README "Behaviour where the specification is silent"). The one module that parses them from request
// text, hides them from Ajv without changing its verdict, and writes them into JSON. Pure: no I/O.
//
// The forms, in order: request text → `number` (safe) or `bigint` (beyond ±(2^53−1)) → validated →
// `bigint` for the database → decimal text (Int64Text) read back → written into JSON as those digits.
// A JS `number` never holds an int64 that is not safe, and JSON.parse never touches one.

/** Largest and smallest signed 64-bit integers, the range of every `format: int64` value. */
export const INT64_MAX = 9223372036854775807n
export const INT64_MIN = -9223372036854775808n

/**
 * An int64 as the store reads it: canonical decimal text (`0`, `-12`, `9223372036854775807`; no
 * sign `+`, no leading zeros), written into JSON verbatim. Text, not bigint: reading and writing
 * digits costs less than creating a BigInt per value and converting it back.
 */
export type Int64Text = string

/** An int64 as validated from a request: a number when safe, else a bigint. */
export type Int64Value = number | bigint

/** The exact value as a bigint, for the database. */
export function toBigInt(value: Int64Value): bigint {
  return typeof value === 'bigint' ? value : BigInt(value)
}

/** Whether `value` is within INT64_MIN…INT64_MAX. */
export function isInt64(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX
}

const PLAIN_INTEGER = /^(?:0|-?[1-9]\d*)$/ // `-0` is not plain: in a body it is read as 0 below; in a path, refused
// Stands for a fractional literal a double would round to an integer: still not an integer, and
// equal to itself (unlike NaN), so an exact repeat of such a member is still one member.
const NOT_AN_INTEGER = 0.5
const DECIMAL = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/
// 19 digits is the most an int64 can have; anything longer is out of range whatever its digits.
const INT64_MAX_DIGITS = 19

/**
 * The exact value of a JSON number literal (lossless-json's number parser for request bodies): a
 * `number` when that is exact (safe integers, and non-integers, which no int64 field accepts
 * anyway), a `bigint` for an integer beyond ±(2^53−1) that could be an int64, and NOT_AN_INTEGER
 * for a literal whose fraction a double would silently drop (`1.00000000000000001`), so that integer
 * validation rejects it instead of rounding it. Integral spellings (`1.0`, `1e3`) are exact integers.
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

// Ajv knows no bigint. Each one is swapped, for the length of one validation, for a safe number with
// the same verdict: ±(2^53−1) inside the int64 range (passes `format: int64`), ±2^64 outside it (fails).
const IN_RANGE_STAND_IN = Number.MAX_SAFE_INTEGER
const OUT_OF_RANGE_STAND_IN = 2 ** 64

type Holder = Record<string | number, unknown>

/**
 * Runs `validate` (a JSON-schema validator that knows no bigint, such as Ajv's) on `data` with every
 * bigint in it replaced by a safe number with the same int64 verdict, then puts the bigints back
 * (defaults the validator added stay). Returns the validator's verdict.
 */
export function validateWithBigInts(validate: (data: unknown) => boolean, data: unknown): boolean {
  const bigints = hideBigInts(data)
  try {
    return validate(data)
  } finally {
    for (const [holder, key, value] of bigints) holder[key] = value
  }
}

function hideBigInts(root: unknown): Array<[Holder, string | number, bigint]> {
  const found: Array<[Holder, string | number, bigint]> = []
  const pending: unknown[] = [root]
  while (pending.length > 0) {
    const node = pending.pop()
    if (typeof node !== 'object' || node === null) continue
    const holder = node as Holder
    for (const key of Object.keys(holder)) {
      const value = holder[key]
      if (typeof value === 'bigint') {
        found.push([holder, key, value])
        const sign = value < 0n ? -1 : 1
        holder[key] = sign * (isInt64(value) ? IN_RANGE_STAND_IN : OUT_OF_RANGE_STAND_IN)
      } else if (typeof value === 'object' && value !== null) {
        pending.push(value)
      }
    }
  }
  return found
}
