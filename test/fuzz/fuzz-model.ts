// The fuzz suites' own model of the README rules: what the service must answer to a body, a query, a petId, a Content-Type or an Authorization value.
import { Buffer } from 'node:buffer'
import { createHmac } from 'node:crypto'
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, NEW_PET_MEMBERS } from '../../src/schemas.js'

/** README "Other statuses": bodies over 16 KiB are 413. */
export const BODY_LIMIT = 16384
export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
export const STATUSES = ['available', 'pending', 'sold'] as const
/** An id no test creates (ids count up from 1): the largest int64. */
export const UNUSED_ID = 2n ** 63n - 1n
/** Nesting deeper than this may be refused as invalid_json rather than validated (the existing suite allows either). */
const DEEP = 1000

/** What the service must answer: the status, the acceptable codes, and for 400 invalid_request the failing fields. */
export interface Expected {
  status: number
  codes: string[]
  /** `details[].field` values (as a set) of an invalid_request; undefined when not checked. */
  fields?: Set<string>
  /** For a 201: the Pet without its id. */
  pet?: { name: string; categoryId: bigint; status: string }
}

const invalidRequest = (fields?: Set<string>): Expected => ({
  status: 400,
  codes: ['invalid_request'],
  ...(fields && { fields }),
})
const INVALID_JSON: Expected = { status: 400, codes: ['invalid_json'] }

// ---------------------------------------------------------------- JSON values, exactly

/** A JSON value with numbers kept as their literal text and objects as their entries, duplicates included. */
type Json =
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'num'; text: string }
  | { t: 'str'; v: string }
  | { t: 'arr'; items: Json[] }
  | { t: 'obj'; entries: Array<[string, Json]> }
type Container = Extract<Json, { t: 'arr' }> | Extract<Json, { t: 'obj' }>

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y

/** Parses text that JSON.parse accepted, without recursion (any depth), and reports the nesting depth. */
function parseJson(text: string): { value: Json; depth: number } {
  let i = 0
  let depth = 0
  const open: Array<{ node: Container; key: string }> = []
  const skip = () => {
    while (i < text.length && ' \t\n\r'.includes(text.charAt(i))) i++
  }
  const string = (): string => {
    i++
    let out = ''
    for (;;) {
      const c = text.charAt(i)
      if (c === '"') {
        i++
        return out
      }
      if (c === '\\') {
        const escaped = text.charAt(i + 1)
        if (escaped === 'u') {
          out += String.fromCharCode(Number.parseInt(text.slice(i + 2, i + 6), 16))
          i += 6
        } else {
          out += ESCAPES[escaped] ?? ''
          i += 2
        }
      } else {
        out += c
        i++
      }
    }
  }
  for (;;) {
    skip()
    let value: Json
    const c = text.charAt(i)
    if (c === '{' || c === '[') {
      const node: Container = c === '{' ? { t: 'obj', entries: [] } : { t: 'arr', items: [] }
      i++
      skip()
      depth = Math.max(depth, open.length + 1)
      if (text.charAt(i) === '}' || text.charAt(i) === ']') {
        i++
        value = node
      } else {
        const frame = { node, key: '' }
        open.push(frame)
        if (node.t === 'obj') {
          frame.key = string()
          skip()
          i++
        }
        continue
      }
    } else if (c === '"') value = { t: 'str', v: string() }
    else if (text.startsWith('true', i)) {
      i += 4
      value = { t: 'bool', v: true }
    } else if (text.startsWith('false', i)) {
      i += 5
      value = { t: 'bool', v: false }
    } else if (text.startsWith('null', i)) {
      i += 4
      value = { t: 'null' }
    } else {
      NUMBER.lastIndex = i
      const literal = NUMBER.exec(text)?.[0] ?? ''
      i += literal.length
      value = { t: 'num', text: literal }
    }
    for (;;) {
      const top = open[open.length - 1]
      if (!top) return { value, depth }
      if (top.node.t === 'arr') top.node.items.push(value)
      else top.node.entries.push([top.key, value])
      skip()
      if (text.charAt(i) === ',') {
        i++
        if (top.node.t === 'obj') {
          skip()
          top.key = string()
          skip()
          i++
        }
        break
      }
      i++
      open.pop()
      value = top.node
    }
  }
}

/** A JSON number literal as sign · digits · 10^exponent, digits without leading or trailing zeros ('' for zero). */
function decimal(text: string): { negative: boolean; digits: string; exponent: bigint } {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!match) throw new Error(`not a JSON number: ${text}`)
  const [, sign, whole = '', fraction = '', exponent = '0'] = match
  const digits = (whole + fraction).replace(/^0+/, '')
  const trimmed = digits.replace(/0+$/, '')
  if (trimmed === '') return { negative: false, digits: '', exponent: 0n }
  return {
    negative: sign === '-',
    digits: trimmed,
    exponent: BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - trimmed.length),
  }
}

/** The exact int64 a JSON number literal denotes, or undefined (a fraction, or outside −2^63…2^63−1). */
function int64Of(literal: string): bigint | undefined {
  const { negative, digits, exponent } = decimal(literal)
  if (digits === '') return 0n
  if (exponent < 0n || BigInt(digits.length) + exponent > 19n) return undefined
  const magnitude = BigInt(digits + '0'.repeat(Number(exponent)))
  const value = negative ? -magnitude : magnitude
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

function numbersEqual(a: string, b: string): boolean {
  const x = decimal(a)
  const y = decimal(b)
  return x.negative === y.negative && x.digits === y.digits && x.exponent === y.exponent
}

/** An object's members, the first of each repeated key. */
function members(object: Extract<Json, { t: 'obj' }>): Map<string, Json> {
  const map = new Map<string, Json>()
  for (const [key, value] of object.entries) if (!map.has(key)) map.set(key, value)
  return map
}

/** Equality of JSON values: numbers by exact value (1 = 1.0 = 1e0), objects regardless of order. */
function jsonEqual(a: Json, b: Json): boolean {
  switch (a.t) {
    case 'null':
      return b.t === 'null'
    case 'bool':
      return b.t === 'bool' && a.v === b.v
    case 'num':
      return b.t === 'num' && numbersEqual(a.text, b.text)
    case 'str':
      return b.t === 'str' && a.v === b.v
    case 'arr':
      return b.t === 'arr' && a.items.length === b.items.length && a.items.every((item, k) => jsonEqual(item, b.items[k] as Json))
    case 'obj': {
      if (b.t !== 'obj') return false
      const x = members(a)
      const y = members(b)
      return x.size === y.size && [...x].every(([key, value]) => y.has(key) && jsonEqual(value, y.get(key) as Json))
    }
  }
}

/** Whether some object, at any depth, repeats a key with a different value (README: invalid_json). */
function repeatsKeyWithAnotherValue(root: Json): boolean {
  const pending: Json[] = [root]
  for (let node = pending.pop(); node; node = pending.pop()) {
    if (node.t === 'arr') pending.push(...node.items)
    if (node.t !== 'obj') continue
    const first = new Map<string, Json>()
    for (const [key, value] of node.entries) {
      const seen = first.get(key)
      if (seen && !jsonEqual(seen, value)) return true
      if (!seen) first.set(key, value)
      pending.push(value)
    }
  }
  return false
}

// ---------------------------------------------------------------- createPet

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** README `name`: 1–255 Unicode characters, one not whitespace, no NUL, no unpaired surrogate. */
export function isValidName(name: string): boolean {
  const length = [...name].length
  return length >= 1 && length <= 255 && /\S/.test(name) && !name.includes('\u0000') && !LONE_SURROGATE.test(name)
}

/** The answer to a createPet whose body is this JSON value (NewPet rules of the README). */
function newPetVerdict(value: Json): Expected {
  if (value.t !== 'obj') return invalidRequest(new Set(['']))
  const fields = new Set<string>()
  const body = members(value)
  for (const key of body.keys()) if (!(NEW_PET_MEMBERS as readonly string[]).includes(key)) fields.add(key)
  const name = body.get('name')
  if (name?.t !== 'str' || !isValidName(name.v)) fields.add('name')
  const category = body.get('categoryId')
  const categoryId = category?.t === 'num' ? int64Of(category.text) : undefined
  if (categoryId === undefined) fields.add('categoryId')
  const status = body.get('status')
  if (status && !(status.t === 'str' && (STATUSES as readonly string[]).includes(status.v))) fields.add('status')
  if (fields.size > 0 || name?.t !== 'str' || categoryId === undefined) return invalidRequest(fields)
  return { status: 201, codes: [], pet: { name: name.v, categoryId, status: status?.t === 'str' ? status.v : 'available' } }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The answer to POST /v1/pets with these body bytes as `application/json` and a valid key. */
export function bodyVerdict(bytes: Buffer): Expected {
  if (bytes.length > BODY_LIMIT) return { status: 413, codes: ['body_too_large'] }
  const unmarked = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? bytes.subarray(3) : bytes
  let text: string
  try {
    text = strictUtf8.decode(unmarked)
  } catch {
    return INVALID_JSON
  }
  if (/^[ \t\n\r]*$/.test(text)) return invalidRequest()
  try {
    JSON.parse(text)
  } catch {
    return INVALID_JSON
  }
  const { value, depth } = parseJson(text)
  if (depth > DEEP) return { status: 400, codes: ['invalid_json', 'invalid_request'] }
  if (repeatsKeyWithAnotherValue(value)) return INVALID_JSON
  return newPetVerdict(value)
}

// ---------------------------------------------------------------- Content-Type

const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+"
const PARAMETER = new RegExp(`^(${TOKEN})=(${TOKEN}|"(?:[^"\\\\]|\\\\.)*")$`)

/**
 * Whether a request body with this Content-Type is read as JSON (README: `application/json` in
 * UTF-8, else 415). Media type and parameter names are case-insensitive (RFC 9110 §8.3.1); a
 * parameter that does not parse is ignored; a `charset` must be utf-8 (or utf8).
 */
export function isJsonContentType(header: string | undefined): boolean {
  if (header === undefined) return false
  const parts: string[] = []
  let current = ''
  let quoted = false
  for (let k = 0; k < header.length; k++) {
    const c = header.charAt(k)
    if (quoted && c === '\\') {
      current += c + header.charAt(k + 1)
      k++
      continue
    }
    if (c === '"') quoted = !quoted
    if (c === ';' && !quoted) {
      parts.push(current)
      current = ''
    } else current += c
  }
  parts.push(current)
  const [media = '', ...parameters] = parts.map((part) => part.replace(/^[ \t]+|[ \t]+$/g, ''))
  if (media.toLowerCase() !== 'application/json') return false
  for (const parameter of parameters) {
    const match = PARAMETER.exec(parameter)
    if (match?.[1]?.toLowerCase() !== 'charset') continue
    const raw = match[2] ?? ''
    const value = raw.startsWith('"') ? raw.slice(1, -1).replace(/\\(.)/g, '$1') : raw
    return /^utf-?8$/i.test(value)
  }
  return true
}

// ---------------------------------------------------------------- Authorization

/**
 * The auth outcome for the Authorization field values as the server reads them (latin1; node keeps
 * the first of repeated values and trims surrounding whitespace): `ok`, or the 401 codes allowed.
 * RFC 6750 §2.1 / RFC 9110 §11.4: credentials = "Bearer" 1*SP b64token, the scheme case-insensitive;
 * no credentials or another scheme is missing_api_key, a well-formed token that is not a key
 * invalid_api_key; malformed Bearer credentials (or any non-ASCII) may be either.
 */
export function authVerdict(values: string[] | undefined, key: string): 'ok' | string[] {
  const value = values?.[0]?.replace(/^[ \t]+|[ \t]+$/g, '')
  if (value === undefined || value === '') return ['missing_api_key']
  const either = ['missing_api_key', 'invalid_api_key']
  const scheme = /^[^ \t]*/.exec(value)?.[0] ?? ''
  const ascii = [...value].every((c) => c.charCodeAt(0) < 0x80)
  if (scheme.toLowerCase() !== 'bearer' || value.slice(scheme.length).trim() === '') return ascii ? ['missing_api_key'] : either
  const credentials = /^bearer +([A-Za-z0-9\-._~+/]+=*)$/i.exec(value)
  if (credentials) return credentials[1] === key ? 'ok' : ['invalid_api_key']
  return either
}

/** How the server sees a header value sent as UTF-8 bytes: as latin1 text. */
export function asServerSees(value: string): string {
  return Buffer.from(value, 'utf8').toString('latin1')
}

// ---------------------------------------------------------------- queries, cursors and petIds

/** A form-urlencoded component as a server decodes it: `+` is a space; a malformed escape leaves it as sent. */
function decodeComponent(text: string): string {
  const spaced = text.replace(/\+/g, ' ')
  try {
    return decodeURIComponent(spaced)
  } catch {
    return spaced
  }
}

/** A query string's parameters by name, every value of a repeated name kept. */
function parseQuery(query: string): Map<string, string[]> {
  const map = new Map<string, string[]>()
  for (const pair of query.split('&')) {
    if (pair === '') continue
    const eq = pair.indexOf('=')
    const name = decodeComponent(eq < 0 ? pair : pair.slice(0, eq))
    const value = eq < 0 ? '' : decodeComponent(pair.slice(eq + 1))
    map.set(name, [...(map.get(name) ?? []), value])
  }
  return map
}

const PLAIN_INT = /^-?(0|[1-9]\d*)$/

/** An int64 written as a plain decimal (no sign `+`, no leading zeros, no exponent), or undefined. */
function plainInt64(text: string): bigint | undefined {
  if (!PLAIN_INT.test(text)) return undefined
  const value = BigInt(text)
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

/**
 * getPet verdict for a path segment as sent: 200/404 for a plain int64 after percent-decoding, 404
 * not_found for an empty one (`/v1/pets/` names no resource), else 400 naming petId.
 */
export function petIdVerdict(sent: string, known: ReadonlyMap<bigint, unknown>): Expected & { id?: bigint } {
  if (sent === '') return { status: 404, codes: ['not_found'] }
  let decoded: string | undefined
  try {
    decoded = decodeURIComponent(sent)
  } catch {
    decoded = undefined
  }
  const id = decoded === undefined ? undefined : plainInt64(decoded)
  if (id === undefined) return { status: 400, codes: ['invalid_request'], fields: new Set(['petId']) }
  return known.has(id) ? { status: 200, codes: [], id } : { status: 404, codes: ['pet_not_found'], id }
}

/**
 * The cursor the service issues after the pet with this id, signed with the database's cursor key
 * (README: opaque; here base64url of the id, a dot, and 16 bytes of HMAC-SHA-256 over "cursor:" + id).
 */
export function cursorFor(id: bigint, key: Buffer): string {
  const digits = id.toString()
  const mac = createHmac('sha256', key).update(`cursor:${digits}`).digest().subarray(0, 16).toString('base64url')
  return `${Buffer.from(digits).toString('base64url')}.${mac}`
}

/** The id a cursor continues after, when it is one the service issued with `key`; else undefined. */
export function cursorId(cursor: string, key: Buffer): bigint | undefined {
  const match = /^([A-Za-z0-9_-]{1,40})\.[A-Za-z0-9_-]{22}$/.exec(cursor)
  if (!match) return undefined
  const text = Buffer.from(match[1] ?? '', 'base64url').toString('utf8')
  const id = text === '-0' ? undefined : plainInt64(text)
  return id !== undefined && cursorFor(id, key) === cursor ? id : undefined
}

/** listPets query verdict: the parameters, or the set of failing parameter names. */
export function listVerdict(
  query: string,
  cursorKey: Buffer,
): { ok: true; limit: number; status?: string | undefined; after?: bigint | undefined } | { ok: false; fields: Set<string> } {
  const params = parseQuery(query)
  const fields = new Set<string>()
  for (const [name, values] of params) {
    if (name !== 'limit' && name !== 'status' && name !== 'cursor') fields.add(name)
    else if (values.length !== 1) fields.add(name)
  }
  const single = (name: string) => (params.get(name)?.length === 1 ? params.get(name)?.[0] : undefined)
  const limitText = single('limit')
  const limit = limitText === undefined ? BigInt(DEFAULT_PAGE_LIMIT) : plainInt64(limitText)
  if (limit === undefined || limit < 1n || limit > BigInt(MAX_PAGE_LIMIT)) fields.add('limit')
  const status = single('status')
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) fields.add('status')
  const cursor = single('cursor')
  const after = cursor === undefined ? undefined : cursorId(cursor, cursorKey)
  if (cursor !== undefined && after === undefined) fields.add('cursor')
  if (fields.size > 0) return { ok: false, fields }
  return { ok: true, limit: Number(limit), status, after }
}
