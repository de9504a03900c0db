// What the bench's reference apps share of the contract (docs/specification.md) and of their start: the error bodies,
// the page size, getPet's deprecation headers, the exact int64 JSON parse, the environment and the listening line.
// The references run from a plain JavaScript copy without the service's modules, so the facts are restated here;
// test/docs/bench-references.test.ts and test/docs/docs.test.ts check them against the service.
import type { AddressInfo } from 'node:net'

/** The exact `Authorization` header value the references accept (BENCH_AUTHORIZATION). */
export const AUTHORIZATION = process.env.BENCH_AUTHORIZATION ?? ''
/** The migrated, seeded database: an SQLite file or a postgres:// URL (BENCH_DATABASE). */
export const DATABASE_LOCATION = process.env.BENCH_DATABASE ?? ''
/** The media type of every JSON answer. */
export const JSON_TYPE = 'application/json; charset=utf-8'
/** The challenge of every 401 (RFC 6750). */
export const WWW_AUTHENTICATE = 'Bearer realm="animal-store"'
/** The pet statuses, in the contract's order. */
export const STATUSES = ['available', 'pending', 'sold'] as const
/** listPets' `limit`: its bounds and default. */
export const PAGE_LIMIT = { minimum: 1, maximum: 100, default: 20 }
/** getPet's headers (RFC 9745 Deprecation, RFC 8594 Sunset, RFC 8288 successor-version link). */
export const DEPRECATION_HEADERS = {
  deprecation: '@1795132800',
  sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  link: '</v1/pets>; rel="successor-version"',
}

/** An error body of the contract: `{code, message, status}`. */
export function errorBody(code: string, message: string, status: number): { code: string; message: string; status: number } {
  return { code, message, status }
}

/** The 401 without a key. */
export const MISSING_KEY = errorBody('missing_api_key', 'An API key is required: send "Authorization: Bearer <API_KEY>".', 401)
/** The 401 with a key that is not accepted. */
export const INVALID_KEY = errorBody('invalid_api_key', 'The API key is not valid, or has been revoked.', 401)
/** The 404 of getPet. */
export const NOT_FOUND = errorBody('pet_not_found', 'No animal with that identifier.', 404)

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** Whether `value` is an int64: a safe integer, or a bigint in the signed 64-bit range. */
export function isInt64(value: unknown): boolean {
  return typeof value === 'bigint' ? value >= INT64_MIN && value <= INT64_MAX : Number.isSafeInteger(value)
}

/** A JSON.parse reviver: an integer past 2^53 keeps its source text as a bigint (JSON.parse alone would round it). */
export function exactIntegers(_key: string, value: unknown, context?: { source?: string }): unknown {
  return typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '')
    ? BigInt(context?.source as string)
    : value
}

/** A JSON.stringify replacer: a bigint (an int64 column) is written as its digits. */
export function bigintDigits(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? (JSON as unknown as { rawJSON(text: string): unknown }).rawJSON(value.toString()) : value
}

/** The database the reference was started on (its one argument); throws a usage line otherwise. */
export function databaseArgument(name: string): 'sqlite' | 'postgres' {
  const database = process.argv[2]
  if (database !== 'sqlite' && database !== 'postgres') throw new Error(`usage: ${name}.js sqlite|postgres (got ${database})`)
  return database
}

/** Prints `NAME listening on http://127.0.0.1:PORT`, the line the bench waits for. */
export function announceListening(name: string, address: AddressInfo | string | null): void {
  if (address === null || typeof address === 'string') throw new Error(`${name}: not listening on a TCP port`)
  process.stdout.write(`${name} listening on http://127.0.0.1:${address.port}\n`)
}
