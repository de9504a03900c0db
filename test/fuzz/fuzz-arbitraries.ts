// The fuzz suites' generators (fast-check arbitraries) and what turns a generated value into bytes: valid and hostile bodies, queries, petIds, Content-Type and Authorization values, whole raw requests.
import { Buffer } from 'node:buffer'
import { METHODS } from 'node:http'
import fc from 'fast-check'
import { toJson } from '../../scripts/lib/test-server.js'
import { MAX_PAGE_LIMIT } from '../../src/schemas.js'
import { BODY_LIMIT, INT64_MAX, INT64_MIN, STATUSES, UNUSED_ID } from './fuzz-model.js'

// ================================================================ generators: valid NewPet

/** `text` as UTF-8 bytes. */
export const utf8 = (text: string) => Buffer.from(text, 'utf8')
/** Each letter of `text` in a random case. */
const anyCase = (text: string) =>
  fc
    .array(fc.boolean(), { minLength: text.length, maxLength: text.length })
    .map((upper) => [...text].map((c, k) => (upper[k] ? c.toUpperCase() : c.toLowerCase())).join(''))

const WHITESPACE = [
  ' ',
  '\t',
  '\n',
  '\r',
  '\u000b',
  '\u000c',
  '\u00a0',
  '\u1680',
  '\u2000',
  '\u200a',
  '\u2028',
  '\u2029',
  '\u202f',
  '\u205f',
  '\u3000',
  '\ufeff',
]
const SPECIAL = [
  '🐕',
  '🐕‍🦺',
  '𝒳',
  'é',
  'e\u0301',
  '\u200d',
  '\u200b',
  '\u202e',
  '\ufffd',
  '\uffff',
  '\u{10ffff}',
  '\u{1f600}',
  'ß',
  'İ',
  '\u0085',
  '"',
  '\\',
  '/',
  '\u0001',
  '\u001f',
  '\u007f',
  '名前',
]
const nameUnit = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }) },
  { weight: 2, arbitrary: fc.constantFrom(...WHITESPACE) },
  { weight: 2, arbitrary: fc.constantFrom(...SPECIAL) },
)
/** A valid `name`: 1–255 code points (often exactly 255), not all whitespace, no NUL, no lone surrogate. */
const validName = fc
  .oneof(
    { weight: 4, arbitrary: fc.array(nameUnit, { minLength: 1, maxLength: 12 }) },
    { weight: 1, arbitrary: fc.array(nameUnit, { minLength: 230, maxLength: 300, size: 'max' }) },
    { weight: 1, arbitrary: fc.array(nameUnit, { minLength: 1, maxLength: 255, size: 'max' }) },
  )
  .map((units) => {
    const points = [...units.join('').replaceAll('\u0000', 'x')].slice(0, 255)
    if (!/\S/.test(points.join(''))) points[0] = 'N'
    return points.join('')
  })

const INT64_EDGES = [
  0n,
  1n,
  -1n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  -(2n ** 53n) - 1n,
  INT64_MAX,
  INT64_MIN,
  INT64_MAX - 1n,
  INT64_MIN + 1n,
  10n ** 18n,
  1234567890123456789n,
]
const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.constantFrom(...INT64_EDGES),
  fc.bigInt({ min: -1000n, max: 1000n }),
  fc.bigInt({ min: -(2n ** 54n), max: 2n ** 54n }),
)

/** `value` written as an exact JSON number literal in one of several spellings (README: 1.0 and 1e3 are exact). */
function spell(value: bigint, style: number): string {
  const sign = value < 0n ? '-' : ''
  const digits = (value < 0n ? -value : value).toString()
  const zeros = /0*$/.exec(digits)?.[0].length ?? 0
  switch (style % 7) {
    case 1:
      return `${value}.0`
    case 2:
      return `${value}e0`
    case 3:
      return digits === '0' ? '-0' : `${sign}${digits[0]}.${digits.slice(1) || '0'}e${digits.length - 1}`
    case 4:
      return zeros > 0 && digits !== '0' ? `${sign}${digits.slice(0, -zeros)}E+${zeros}` : `${value}.000`
    case 5:
      return digits === '0' ? '0.00e-2' : `${sign}${digits}00e-2`
    case 6:
      return `${sign}0.${digits}e${digits.length}`
    default:
      return value.toString()
  }
}

type Escape = 'json' | 'ascii' | 'all' | 'raw' | 'cesu'

/** A JSON string token for `value`: JSON.stringify, \u-escaping of non-ASCII or of everything, unescaped (often invalid), or lone surrogates as CESU-8 bytes (invalid UTF-8). */
function quote(value: string, style: Escape): Buffer {
  const unit = (code: number) => `\\u${code.toString(16).padStart(4, '0')}`
  switch (style) {
    case 'json':
      return utf8(JSON.stringify(value))
    case 'raw':
      return utf8(`"${value}"`)
    case 'cesu': {
      const parts: Buffer[] = [utf8('"')]
      for (const point of value) {
        const code = point.charCodeAt(0)
        if (point.length === 1 && code >= 0xd800 && code <= 0xdfff) {
          parts.push(Buffer.from([0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]))
        } else parts.push(utf8(JSON.stringify(point).slice(1, -1)))
      }
      parts.push(utf8('"'))
      return Buffer.concat(parts)
    }
    default: {
      let out = '"'
      for (let k = 0; k < value.length; k++) {
        const code = value.charCodeAt(k)
        const c = value.charAt(k)
        out += style === 'all' || code < 0x20 || code > 0x7e || c === '"' || c === '\\' ? unit(code) : c
      }
      return utf8(`${out}"`)
    }
  }
}

const validEscape = fc.constantFrom<Escape>('json', 'json', 'ascii', 'all')
const anyEscape = fc.oneof(
  { weight: 8, arbitrary: fc.constant<Escape>('json') },
  { weight: 2, arbitrary: fc.constantFrom<Escape>('ascii', 'all') },
  { weight: 1, arbitrary: fc.constantFrom<Escape>('raw', 'cesu') },
)
/** Whitespace between tokens; the last four are not JSON whitespace. */
const SEPARATORS = ['', ' ', '\n', '\t', ' \r\n  ', '\u00a0', '\u3000', '\u000c', '\u000b']
const validSpace = fc.constantFrom(...SEPARATORS.slice(0, 5))
const anySpace = fc.oneof({ weight: 8, arbitrary: validSpace }, { weight: 1, arbitrary: fc.constantFrom(...SEPARATORS.slice(5)) })

/** `{k: v, …}` with `space` around every token. */
function object(entries: Array<[Buffer, Buffer]>, space: string): Buffer {
  const s = utf8(space)
  const parts: Buffer[] = [utf8('{'), s]
  for (const [k, [key, value]] of entries.entries()) {
    if (k > 0) parts.push(s, utf8(','), s)
    parts.push(key, s, utf8(':'), s, value)
  }
  parts.push(s, utf8('}'))
  return Buffer.concat(parts)
}

interface NewPetCase {
  name: string
  categoryId: bigint
  status: (typeof STATUSES)[number] | undefined
  order: number[]
  spelling: number
  escape: Escape
  space: string
}

/** A valid NewPet and how to write it: field order, number spelling, string escapes, whitespace. */
export const newPet: fc.Arbitrary<NewPetCase> = fc.record({
  name: validName,
  categoryId: int64,
  status: fc.option(fc.constantFrom(...STATUSES), { nil: undefined }),
  order: fc.shuffledSubarray([0, 1, 2], { minLength: 3, maxLength: 3 }),
  spelling: fc.nat(6),
  escape: validEscape,
  space: validSpace,
})

/** The NewPet as JSON text: with toJson (exact bigint digits) in the plain case, else hand-written. */
export function renderNewPet(pet: NewPetCase): Buffer {
  const fields: Array<[string, Buffer]> = [
    ['name', quote(pet.name, pet.escape)],
    ['categoryId', utf8(spell(pet.categoryId, pet.spelling))],
    ...(pet.status === undefined ? [] : [['status', utf8(JSON.stringify(pet.status))] as [string, Buffer]]),
  ]
  const ordered = pet.order.flatMap((k) => (fields[k] ? [fields[k]] : []))
  if (pet.spelling === 0 && pet.escape === 'json' && pet.space === '') {
    const value: Record<string, unknown> = {}
    for (const [key] of ordered) value[key] = key === 'name' ? pet.name : key === 'categoryId' ? pet.categoryId : pet.status
    return utf8(toJson(value))
  }
  return object(
    ordered.map(([key, value]) => [utf8(JSON.stringify(key)), value]),
    pet.space,
  )
}

// ================================================================ generators: hostile bodies

const NUMBER_TOKENS = [
  '0',
  '-0',
  '1',
  '-1',
  '1.0',
  '1e3',
  '1E+3',
  '1e-0',
  '1.5',
  '-1.5',
  '0.5',
  '1e400',
  '-1e400',
  '2e400',
  '1e-400',
  '9223372036854775807',
  '9223372036854775808',
  '-9223372036854775808',
  '-9223372036854775809',
  '9007199254740993',
  '9007199254740992',
  '18446744073709551616',
  '9.223372036854775807e18',
  '9.223372036854775808e18',
  '1.00000000000000001',
  '9007199254740993.5',
  '100e-2',
  '10e-1',
  '0e999999999999999999999',
  '1e99999999999999999999',
  '123456789012345678901234567890',
  '5e-324',
  '1.7976931348623157e308',
  '-0.0',
  '0.0e5',
  '1e+19',
  '1e18',
  '922337203685477580.7e1',
]
const BAD_NUMBER_TOKENS = [
  '01',
  '-01',
  '00',
  '+1',
  '.5',
  '1.',
  '1.e3',
  'NaN',
  'Infinity',
  '-Infinity',
  '0x10',
  '1_000',
  '- 1',
  '1e',
  '1e+',
  '--1',
  '0b1',
  '1,5',
  '١',
]
const randomLiteral = fc
  .tuple(
    fc.boolean(),
    fc.oneof(fc.constant('0'), fc.stringMatching(/^[1-9][0-9]{0,25}$/)),
    fc.option(fc.stringMatching(/^[0-9]{1,20}$/), { nil: undefined }),
    fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), fc.stringMatching(/^[0-9]{1,4}$/)), {
      nil: undefined,
    }),
  )
  .map(([negative, whole, fraction, exponent]) => {
    return `${negative ? '-' : ''}${whole}${fraction === undefined ? '' : `.${fraction}`}${exponent ? exponent.join('') : ''}`
  })
const numberToken = fc.oneof(
  fc.constantFrom(...NUMBER_TOKENS),
  fc.constantFrom(...BAD_NUMBER_TOKENS),
  randomLiteral,
  fc.tuple(int64, fc.nat(6)).map(([value, style]) => spell(value, style)),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
)

const STRING_VALUES = [
  '',
  ' ',
  '\t\n',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'a\udfffb',
  '\udc00\ud800',
  '\ud83d',
  '\ud83d\ude00',
  '\u2028',
  '\ufeff',
  '\u00a0',
  '\u3000\u3000',
  'x'.repeat(255),
  'x'.repeat(256),
  '𝒳'.repeat(255),
  '𝒳'.repeat(256),
  ' '.repeat(255),
  'e\u0301',
  '\u{10ffff}',
  'Available',
  'available',
  'pending',
  'sold',
  'SOLD',
  '1',
  '{}',
  '__proto__',
  '\\',
  '"',
]
const anyString = fc.oneof(
  fc.constantFrom(...STRING_VALUES),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.string({ unit: fc.constantFrom('\ud800', '\udc00', 'a', '\u0000', ' ', '\ud83d\ude00', '\u00a0'), maxLength: 6 }),
)
const KEYS = [
  'name',
  'categoryId',
  'status',
  'id',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'Name',
  'NAME',
  'categoryid',
  'category_id',
  '',
  ' name',
  'name ',
  'a.b',
  'a/b',
  '~1',
  '0',
  '$ref',
  'name\u0000',
]
const keyToken = fc
  .tuple(fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...KEYS) }, fc.string({ unit: 'binary', maxLength: 8 })), anyEscape)
  .map(([key, style]) => quote(key, style))

const stringToken = fc.tuple(anyString, anyEscape).map(([value, style]) => quote(value, style))
const leafToken = fc.oneof(stringToken, numberToken.map(utf8), fc.constantFrom('true', 'false', 'null').map(utf8))
/** Any JSON-ish value as bytes: leaves, arrays and objects a few levels deep (hostile keys, numbers and strings). */
const { value: anyValue } = fc.letrec<{ value: Buffer; array: Buffer; object: Buffer }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, leafToken, tie('array'), tie('object')),
  array: fc
    .array(tie('value'), { maxLength: 4 })
    .map((items) => Buffer.concat([utf8('['), ...items.flatMap((item, k) => (k ? [utf8(','), item] : [item])), utf8(']')])),
  object: fc.array(fc.tuple(keyToken, tie('value')), { maxLength: 4 }).map((entries) => object(entries, '')),
}))

/** Deterministic shuffle of `items` by `seed`. */
function shuffle<T>(items: T[], seed: number): T[] {
  const out = [...items]
  let state = seed >>> 0 || 1
  for (let k = out.length - 1; k > 0; k--) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    const j = state % (k + 1)
    ;[out[k], out[j]] = [out[j] as T, out[k] as T]
  }
  return out
}

/** Objects close to a NewPet: each field valid, hostile or missing, plus unknown fields and repeated keys. */
const nearNewPet = fc
  .record({
    name: fc.option(
      fc.oneof(
        { weight: 5, arbitrary: fc.tuple(validName, validEscape).map(([name, style]) => quote(name, style)) },
        { weight: 2, arbitrary: stringToken },
        { weight: 1, arbitrary: anyValue },
      ),
      { nil: undefined, freq: 8 },
    ),
    categoryId: fc.option(
      fc.oneof(
        { weight: 4, arbitrary: fc.tuple(int64, fc.nat(6)).map(([value, style]) => utf8(spell(value, style))) },
        { weight: 3, arbitrary: numberToken.map(utf8) },
        { weight: 1, arbitrary: anyValue },
      ),
      { nil: undefined, freq: 8 },
    ),
    status: fc.option(
      fc.oneof(
        {
          weight: 4,
          arbitrary: fc.constantFrom(...STATUSES, 'Available', 'SOLD', '', 'lost', ' sold').map((s) => utf8(JSON.stringify(s))),
        },
        { weight: 1, arbitrary: anyValue },
      ),
      { nil: undefined, freq: 2 },
    ),
    extras: fc.oneof(fc.constant([]), fc.array(fc.tuple(keyToken, anyValue), { minLength: 1, maxLength: 3 })),
    repeats: fc.oneof(
      { weight: 3, arbitrary: fc.constant([]) },
      fc.array(fc.record({ which: fc.nat(), how: fc.constantFrom('same', 'respelled', 'other'), other: anyValue }), {
        minLength: 1,
        maxLength: 2,
      }),
    ),
    order: fc.nat(),
    space: anySpace,
  })
  .map(({ name, categoryId, status, extras, repeats, order, space }) => {
    const entries: Array<[Buffer, Buffer, string]> = []
    if (name) entries.push([utf8('"name"'), name, 'name'])
    if (categoryId) entries.push([utf8('"categoryId"'), categoryId, 'categoryId'])
    if (status) entries.push([utf8('"status"'), status, 'status'])
    for (const [key, value] of extras) entries.push([key, value, ''])
    for (const { which, how, other } of repeats) {
      const [key, value, plain] = entries[which % Math.max(entries.length, 1)] ?? [utf8('"name"'), utf8('"x"'), 'name']
      if (how === 'same') entries.push([key, value, plain])
      else if (how === 'respelled') entries.push([plain ? quote(plain, 'all') : key, value, plain])
      else entries.push([key, other, plain])
    }
    return object(
      shuffle(entries, order).map(([key, value]) => [key, value]),
      space,
    )
  })

const deepBody = fc
  .record({
    depth: fc.oneof(fc.integer({ min: 1, max: 300 }), fc.integer({ min: 300, max: 9000 })),
    kind: fc.constantFrom('[', '{"a":', '{"name":', '[{"x":'),
    where: fc.constantFrom('top', 'extra', 'name', 'categoryId'),
    closed: fc.oneof({ weight: 5, arbitrary: fc.constant(true) }, fc.constant(false)),
  })
  .map(({ depth, kind, where, closed }) => {
    const close = kind === '[' ? ']' : kind === '[{"x":' ? '}]' : '}'
    let nested = `${kind.repeat(depth)}${kind === '[' ? '' : '1'}${close.repeat(depth)}`
    if (!closed) nested = nested.slice(0, -1)
    if (where === 'top') return utf8(nested)
    if (where === 'extra') return utf8(`{"name":"x","categoryId":1,"deep":${nested}}`)
    return utf8(where === 'name' ? `{"name":${nested},"categoryId":1}` : `{"name":"x","categoryId":${nested}}`)
  })

const hugeBody = fc
  .record({
    length: fc.oneof(
      fc.integer({ min: 250, max: 260 }),
      fc.integer({ min: 1000, max: 20000 }),
      fc.integer({ min: 16330, max: 16400 }),
    ),
    unit: fc.constantFrom('x', 'é', '🐕', ' ', '\\u0000', '\\u0041', '\\ud800'),
    where: fc.constantFrom('name', 'extra', 'status', 'key'),
  })
  .map(({ length, unit, where }) => {
    const s = unit.repeat(length)
    if (where === 'name') return utf8(`{"name":"${s}","categoryId":1}`)
    if (where === 'extra') return utf8(`{"name":"x","categoryId":1,"pad":"${s}"}`)
    if (where === 'status') return utf8(`{"name":"x","categoryId":1,"status":"${s}"}`)
    return utf8(`{"${s}":1,"name":"x","categoryId":1}`)
  })

const GARBAGE = [
  '',
  ' ',
  '\r\n',
  '\u00a0',
  '\u3000',
  '\ufeff',
  'null',
  '[]',
  '{}',
  '"pet"',
  '42',
  'true',
  '-0',
  '1e400',
  '{"name":"x","categoryId":1',
  '{"name":"x","categoryId":1}}',
  '{"name":"x","categoryId":1}{}',
  '{"name":"x","categoryId":1,}',
  "{'name':'x','categoryId':1}",
  '{"name":"x"/*c*/,"categoryId":1}',
  '{name:"x",categoryId:1}',
  '\ufeff{"name":"x","categoryId":1}',
  '\ufeff\ufeff{"name":"x","categoryId":1}',
  '{"name":"x","categoryId":01}',
  '{"name":"x","categoryId":NaN}',
  '{"name":"x","categoryId":1}\u0000',
  '{"name":"x","categoryId":1} //',
  '[{"name":"x","categoryId":1}]',
  '{"name":"\\x41","categoryId":1}',
  '{"name":"\\u00","categoryId":1}',
  '{"name":"\\uD800\\uDC00","categoryId":1}',
  '{"name":"a\\/b","categoryId":1}',
  '{"name":"tab\there","categoryId":1}',
  '{"name":"x","categoryId":1,"status":"sold","status":"pending"}',
  '{"name":"x","name":"x","categoryId":1}',
  '{"name":"x","categoryId":1,"categoryId":1.0}',
  '{"name":"x","categoryId":1,"x":{},"x":[]}',
]
const BAD_UTF8 = [
  [0xff],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe0, 0x80, 0x80],
  [0x80],
  [0xf0, 0x9f, 0x98],
  [0xfe, 0xff],
]
const garbageBody = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...GARBAGE).map(utf8) },
  fc.uint8Array({ maxLength: 48 }).map((bytes) => Buffer.from(bytes)),
  fc.string({ unit: 'binary', maxLength: 40 }).map(utf8),
  fc.tuple(nearNewPet, fc.nat()).map(([body, cut]) => body.subarray(0, cut % (body.length + 1))),
  fc
    .tuple(nearNewPet, fc.constantFrom(',', '}', ']', 'x', '\u0000', ' {}', '\ufeff'))
    .map(([body, tail]) => Buffer.concat([body, utf8(tail)])),
  fc
    .tuple(fc.constantFrom(...BAD_UTF8), fc.constantFrom('name', 'key', 'outside'))
    .map(([bytes, where]) =>
      Buffer.concat(
        where === 'name'
          ? [utf8('{"name":"a'), Buffer.from(bytes), utf8('b","categoryId":1}')]
          : where === 'key'
            ? [utf8('{"'), Buffer.from(bytes), utf8('":1,"name":"x","categoryId":1}')]
            : [utf8('{"name":"x","categoryId":1}'), Buffer.from(bytes)],
      ),
    ),
)

/** Any body that is not a valid NewPet: near misses, random JSON, deep nesting, huge bodies, garbage bytes. */
export const hostileBody = fc.oneof(
  { weight: 8, arbitrary: nearNewPet },
  { weight: 1, arbitrary: anyValue },
  { weight: 1, arbitrary: deepBody },
  { weight: 1, arbitrary: hugeBody },
  { weight: 3, arbitrary: garbageBody },
)

// ================================================================ generators: queries, petIds, headers

/** Percent-encodes the UTF-8 bytes of `text` except the characters `keep` matches. */
export function percentEncode(text: string, keep: RegExp, upper = true): string {
  let out = ''
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte)
    const hex = byte.toString(16).padStart(2, '0')
    out += byte < 0x80 && keep.test(c) ? c : `%${upper ? hex.toUpperCase() : hex}`
  }
  return out
}
/** Which characters each percent-encoding leaves as they are. */
export const ENCODINGS = {
  component: /[A-Za-z0-9\-_.!~*'()]/,
  every: /(?!)/,
  minimal: /[A-Za-z0-9\-._~!$'()*,;:@/?]/,
  /** RFC 3986 pchar: what a path segment may hold unescaped. */
  segment: /[A-Za-z0-9\-._~!$&'()*+,;=:@]/,
}
type Encoding = keyof typeof ENCODINGS | 'plus'
const encodingArb = fc.constantFrom<Encoding>('component', 'component', 'every', 'minimal', 'plus')
/** A query name or value percent-encoded as `how` says (`plus`: spaces as `+`). */
export function encodeQueryPart(text: string, how: Encoding, upper: boolean): string {
  if (how === 'plus')
    return text
      .split(' ')
      .map((part) => percentEncode(part, ENCODINGS.component, upper))
      .join('+')
  return percentEncode(text, ENCODINGS[how], upper)
}
/** Malformed percent-escapes (and the two-byte ones that decode fine). */
const MALFORMED = ['%', '%Z1', '%E0%A4', '%FF', '%C0%AF', '%ED%A0%80', '%2', '%%']

/** A query value: literal text, a cursor after a known pet (by index), or a cursor after any int64. */
export type QueryValue = string | { knownIndex: number } | { randomId: bigint }
const limitValue = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 1, max: MAX_PAGE_LIMIT }).map(String) },
  fc.constantFrom(
    '0',
    String(MAX_PAGE_LIMIT + 1),
    '-1',
    '-0',
    '1.5',
    '1e1',
    '+5',
    '05',
    ' 5',
    '5 ',
    'abc',
    '',
    '0x10',
    '9007199254740993',
    '99999999999999999999999',
    '１',
    '٣',
    '5\u0000',
    '1,2',
  ),
  fc.integer().map(String),
  fc.string({ maxLength: 4 }),
)
const statusValue = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...STATUSES) },
  fc.constantFrom('Available', 'SOLD', 'lost', '', ' sold', 'sold ', 'available,sold', 'pending\u0000'),
  fc.string({ maxLength: 6 }),
)
const cursorValue: fc.Arbitrary<QueryValue> = fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((knownIndex) => ({ knownIndex })) },
  { weight: 2, arbitrary: int64.map((randomId) => ({ randomId })) },
  fc.constantFrom(
    'abc',
    'MS41',
    'MDAx',
    'LTA',
    'MA==',
    'MA',
    'Kw',
    'x'.repeat(65),
    '',
    'MQ.',
    'M Q',
    'OTIyMzM3MjAzNjg1NDc3NTgwOA',
  ),
  fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), maxLength: 12 }),
  fc.string({ maxLength: 8 }),
)
const unknownName = fc.oneof(
  fc.constantFrom(
    'limt',
    'Limit',
    'LIMIT',
    'offset',
    'page',
    '__proto__',
    'constructor',
    'cursor ',
    '',
    'limit[]',
    'status[0]',
    'hasOwnProperty',
  ),
  fc.string({ maxLength: 6 }),
)
const queryParam = fc.record({
  pair: fc.oneof(
    { weight: 3, arbitrary: fc.tuple(fc.constant('limit'), limitValue as fc.Arbitrary<QueryValue>) },
    { weight: 3, arbitrary: fc.tuple(fc.constant('status'), statusValue as fc.Arbitrary<QueryValue>) },
    { weight: 2, arbitrary: fc.tuple(fc.constant('cursor'), cursorValue) },
    { weight: 1, arbitrary: fc.tuple(unknownName, fc.string({ maxLength: 6 }) as fc.Arbitrary<QueryValue>) },
  ),
  nameEncoding: fc.oneof({ weight: 5, arbitrary: fc.constant<Encoding>('component') }, encodingArb),
  valueEncoding: encodingArb,
  upper: fc.boolean(),
  withoutEquals: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
  malformed: fc.option(fc.constantFrom(...MALFORMED), { nil: undefined, freq: 8 }),
})
/** A listPets query: up to four parameters, valid or not, variously encoded and separated. */
export const queryArb = fc.record({
  params: fc.array(queryParam, { maxLength: 4 }),
  separator: fc.constantFrom('&', '&', '&', '&&'),
  questionMark: fc.boolean(),
})

type Segment = { text: string } | { knownIndex: number } | { randomId: bigint }
const segmentArb: fc.Arbitrary<Segment> = fc.oneof(
  { weight: 3, arbitrary: fc.nat().map((knownIndex) => ({ knownIndex })) },
  { weight: 2, arbitrary: int64.map((randomId) => ({ randomId })) },
  {
    weight: 2,
    arbitrary: fc
      .constantFrom(
        '0',
        '-0',
        '-1',
        '9223372036854775807',
        '-9223372036854775808',
        '9223372036854775808',
        '-9223372036854775809',
        '18446744073709551616',
        '1e3',
        '1.5',
        '+1',
        '01',
        '00',
        ' 1',
        '1 ',
        '0x1',
        '１',
        '',
        '.',
        '..',
        '1/2',
        '1?x',
        '1#x',
        '%',
        '1;x',
        '1,2',
        'null',
        'undefined',
        'NaN',
        '-',
      )
      .map((text) => ({ text })),
  },
  fc.string({ unit: 'binary', maxLength: 20 }).map((text) => ({ text })),
  fc.string({ unit: 'grapheme-ascii', maxLength: 12 }).map((text) => ({ text })),
  fc.stringMatching(/^-?[1-9][0-9]{19,130}$/).map((text) => ({ text })),
  fc.stringMatching(/^[a-z0-9]{90,140}$/).map((text) => ({ text })),
)
/** A getPet path segment: a known id, any int64, or near and far misses, variously percent-encoded. */
export const segmentCase = fc.record({
  segment: segmentArb,
  encoding: fc.constantFrom<Exclude<Encoding, 'plus' | 'minimal'>>('component', 'every', 'segment'),
  upper: fc.boolean(),
  malformed: fc.option(fc.constantFrom(...MALFORMED), { nil: undefined, freq: 8 }),
})

const OTHER_MEDIA = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/json-patch+json',
  'application/vnd.api+json',
  'application/problem+json',
  'json',
  'application',
  'application/',
  '/json',
  '*/*',
  'application/*',
  'text/json',
  'application/json/x',
  'application/ json',
  'application /json',
  'application\\json',
  '',
]
const OTHER_PARAMS = [
  'foo=bar',
  'boundary=x',
  'q=0.5',
  'version=1',
  'foo="a;b"',
  'foo="a;charset=latin1"',
  'profile="http://x/y"',
  'charset',
  'foo',
  '=x',
  '',
  'charset=',
  'x-charset=latin1',
  'foo="bar\\"baz"',
]
const charsetParam = fc
  .tuple(
    anyCase('charset'),
    fc.oneof(
      { weight: 3, arbitrary: fc.oneof(anyCase('utf-8'), anyCase('utf8')) },
      fc.constantFrom(
        '"utf-8"',
        '"UTF-8"',
        '"utf8"',
        'iso-8859-1',
        'latin1',
        'utf-16',
        'UTF-16LE',
        'us-ascii',
        'utf-7',
        'utf-32',
        '"utf-16"',
        'unicode-1-1-utf-8',
        'x',
        'utf-8x',
        '"utf-8',
      ),
    ),
  )
  .map(([name, value]) => `${name}=${value}`)
/** A Content-Type header: JSON in any case with charset and other parameters, other media types, or none. */
export const contentTypeArb = fc.record({
  media: fc.oneof({ weight: 4, arbitrary: anyCase('application/json') }, fc.constantFrom(...OTHER_MEDIA)),
  params: fc.array(fc.oneof(charsetParam, fc.constantFrom(...OTHER_PARAMS)), { maxLength: 3 }),
  separator: fc.constantFrom(';', '; ', ' ; ', ';\t', ';  '),
  lead: fc.constantFrom('', ' ', '\t'),
  absent: fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, fc.constant(true)),
})

/** Authorization values; KEY, CHANGED, TRUNCATED and UPPER stand for the valid key and variants of it. */
const AUTH_TEMPLATES = [
  'Basic dXNlcjpwYXNz',
  'Token KEY',
  'Bearer',
  'Bearer ',
  'Bearer:KEY',
  'BearerKEY',
  'Bearer\tKEY',
  'KEY',
  'Bearer, KEY',
  'Bearer KEY KEY',
  'Bearer KEY,KEY',
  'Bearer "KEY"',
  'Digest KEY',
  'Bearer=KEY',
  'Bearer KEY=',
  'Bearer KEY==',
  'Bearer KEYx',
  'Bearer xKEY',
  'Bearer CHANGED',
  'Bearer TRUNCATED',
  'Bearer UPPER',
  'Bearer ask_',
  'Bearer \tKEY',
  'Bearer KEY\t',
  'Bearer KEY;',
  'Bearer =',
  'Bearer ====',
  'Bearer +/',
  'Bearer\u00a0KEY',
  'Bearer KEY\u00a0',
  `Bearer ${'a'.repeat(3000)}`,
  'bearer KEY',
  'BEARER  KEY  ',
  'Bearer ключ',
  'Bearer KEY🐕',
  '🐕 KEY',
]
const authValue = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .tuple(anyCase('Bearer'), fc.constantFrom(' ', '  ', '   '), fc.constantFrom('', ' ', '  '))
      .map(([s, sp, tail]) => `${s}${sp}KEY${tail}`),
  },
  { weight: 4, arbitrary: fc.constantFrom(...AUTH_TEMPLATES) },
  fc.string({ unit: 'grapheme-ascii', maxLength: 20 }).map((s) => `Bearer ${s}`),
  fc.string({ unit: 'grapheme', maxLength: 10 }),
  fc.string({
    unit: fc.mapToConstant(
      { num: 95, build: (v) => String.fromCharCode(v + 0x20) },
      { num: 128, build: (v) => String.fromCharCode(v + 0x80) },
    ),
    maxLength: 12,
  }),
)
/** Authorization header values (none, one or two) and the operation to send them to. */
export const authCase = fc.record({
  values: fc.oneof(
    { weight: 1, arbitrary: fc.constant([] as string[]) },
    { weight: 6, arbitrary: fc.array(authValue, { minLength: 1, maxLength: 2 }) },
  ),
  target: fc.constantFrom('list', 'create', 'get-known', 'get-unused', 'nothing', 'delete', 'head', 'create-bad-json'),
})

/** The key substituted into an Authorization template. */
export function fillKey(template: string, key: string): string {
  const variants: Record<string, string> = {
    CHANGED: key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A'),
    TRUNCATED: key.slice(0, -1),
    UPPER: key.toUpperCase(),
    KEY: key,
  }
  return template.replace(/CHANGED|TRUNCATED|UPPER|KEY/g, (name) => variants[name] ?? name)
}

/** Header values node:http can send as they are; others go over a raw socket. */
export const LATIN1 = /^[\t\x20-\x7e\x80-\xff]*$/

/** One request written by hand, for header values node:http refuses (characters beyond latin1). */
export function rawRequest(method: string, path: string, headers: Array<[string, string]>, body?: Buffer): Buffer {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    ...headers.map(([name, value]) => `${name}: ${value}`),
    'Connection: close',
  ]
  if (body) lines.push(`Content-Length: ${body.length}`)
  return Buffer.concat([utf8(`${lines.join('\r\n')}\r\n\r\n`), body ?? Buffer.alloc(0)])
}

// ================================================================ generators: whole requests

/** A valid NewPet padded with whitespace (before or after) to about `size` bytes, often within 48 bytes of the body limit. */
export const bodySizeCase = fc.record({
  pet: newPet,
  size: fc.oneof(fc.integer({ min: BODY_LIMIT - 48, max: BODY_LIMIT + 48 }), fc.integer({ min: 100, max: 64 * 1024 })),
  pad: fc.constantFrom(' ', '\n', '\t', '\r\n'),
  before: fc.boolean(),
  chunked: fc.boolean(),
})

/** A target operation, which of its path characters to percent-encode, an optional absolute-form prefix, and the key to send. */
export const pathSpelling = fc.record({
  target: fc.constantFrom('list', 'create', 'get', 'nothing'),
  encode: fc.array(fc.boolean(), { minLength: 24, maxLength: 24 }),
  upper: fc.boolean(),
  absolute: fc.option(
    fc.constantFrom('http://127.0.0.1', 'http://x', 'HTTP://Example.COM:80', 'https://other.example', 'http://[::1]:1'),
    { nil: undefined, freq: 3 },
  ),
  key: fc.constantFrom('valid', 'valid', 'none', 'wrong'),
})

/** Any method on the pet paths and on paths under /v1 that no route serves, with or without a key and a body. */
export const methodCase = fc.record({
  method: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('PUT', 'DELETE', 'PATCH', 'OPTIONS') },
    { weight: 1, arbitrary: fc.constantFrom('GET', 'HEAD', 'POST') },
    { weight: 2, arbitrary: fc.constantFrom(...METHODS.filter((m) => m !== 'CONNECT')) },
  ),
  path: fc.constantFrom(
    '/v1/pets',
    '/v1/pets/KNOWN',
    `/v1/pets/${UNUSED_ID}`,
    '/v1/pets/abc',
    '/v1/nothing',
    '/v1/pets/1/owner',
    '/v1',
    '/v1/',
    '/v1/pets/',
  ),
  key: fc.constantFrom('valid', 'valid', 'none', 'wrong'),
  body: fc.constantFrom('none', 'json', 'text'),
})

/** The parts of one hand-written HTTP/1.1 request: request line, Host, Authorization, Content-Type, framing, body and extra header lines, mostly valid. */
export const rawCase = fc.record({
  method: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS') },
    fc.constantFrom('get', 'FOO', 'G E T', '', 'PRI'),
  ),
  target: fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom('/v1/pets', '/v1/pets?limit=2', '/v1/pets/1', '/v1/nothing') },
    fc.constantFrom(
      'http://x/v1/pets',
      '*',
      'v1/pets',
      '/v1/pets/é',
      '/v1/pe ts',
      '',
      '/v1/pets?limit=1#f',
      '/%76%31/pets',
      '//v1/pets',
      '/v1/pets/%',
    ),
  ),
  version: fc.oneof(
    { weight: 6, arbitrary: fc.constant('HTTP/1.1') },
    fc.constantFrom('HTTP/1.0', 'HTTP/2.0', 'http/1.1', 'HTTP/1.1 ', 'HTTP/9.9', '', 'HTTP/1.10'),
  ),
  eol: fc.oneof({ weight: 6, arbitrary: fc.constant('\r\n') }, fc.constant('\n')),
  host: fc.oneof({ weight: 6, arbitrary: fc.constant('present') }, fc.constantFrom('absent', 'twice', 'empty')),
  auth: fc.oneof(
    { weight: 4, arbitrary: fc.constant('valid') },
    fc.constantFrom('none', 'wrong', 'utf8', 'control', 'twice', 'lower-scheme'),
  ),
  contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('json') }, fc.constantFrom('none', 'text', 'utf16', 'control')),
  framing: fc.oneof(
    { weight: 4, arbitrary: fc.constant('length') },
    fc.constantFrom(
      'none',
      'length-short',
      'length-twice',
      'length-negative',
      'length-junk',
      'chunked',
      'chunked-bad',
      'chunked+length',
      'te-gzip',
    ),
  ),
  body: fc.constantFrom('valid', 'valid', 'garbage', 'empty', 'big'),
  extra: fc.array(
    fc.constantFrom(
      'X-A: 1',
      'Bad Name: 1',
      'X-Ctl: a\u0001b',
      'X-Utf8: é',
      ': empty',
      'X-Fold: a\r\n b',
      'Expect: 100-continue',
      'Expect: nothing',
      'X-Big: <17000 × a>',
      'Content-Encoding: gzip',
    ),
    { maxLength: 2 },
  ),
})
