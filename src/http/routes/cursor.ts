// The opaque keyset cursor of listPets (docs/specification.md, Pagination): the last `id` returned,
// and, when reads come from replicas, the WAL position its page was read at (so the next page is
// read where at least that much is, and paging never goes back in time); signed so that only cursors
// the service issued are accepted. Form: `<base64url of the id's decimal digits>.<base64url of the
// first 16 bytes of HMAC-SHA-256(key, "cursor:" + digits)>`, or with a position
// `<digits part>.<base64url of the position's 8 bytes, big-endian>.<MAC of "cursor:" + digits + "@" +
// that part>`. The first form is the one every earlier release issued, and is still accepted. The key
// is the database's `cursor` secret, so every instance accepts every other's cursors.
import { type Int64Text, isInt64 } from '../../int64.js'
import type { Position } from '../../store/index.js'
import { createSigner } from './signing.js'

const DIGITS = /^-?(0|[1-9]\d{0,18})$/
/** A position part: 8 bytes in base64url. */
const POSITION_PART = /^[A-Za-z0-9_-]{11}$/
/** Most MACs kept (see `mac` below); past it the cache starts over. docs/security.md states it. */
export const MAC_CACHE_ENTRIES = 4096

/** Makes and checks cursors with one key. */
export interface CursorCodec {
  /**
   * The cursor that continues after the pet with this `id` (one HMAC), carrying `position` when
   * given (the position its page was read at).
   */
  encode(lastId: Int64Text | bigint, position?: Position): string
  /**
   * The `id` a cursor continues after, or undefined when `cursor` is not one this service issued
   * (malformed, tampered, or signed with another key). One HMAC; the Ajv format `cursor` uses it, so
   * a bad cursor is reported with every other bad parameter.
   */
  verify(cursor: string): bigint | undefined
  /** The `id` of a cursor that `verify` accepted (no HMAC: call it only after validation). */
  idOf(verified: string): bigint
  /** The position a cursor that `verify` accepted carries, or undefined (a cursor of the first form). */
  positionOf(verified: string): Position | undefined
}

/** A codec signing with `key` (HMAC-SHA-256, RFC 2104; the database's `cursor` secret). */
export function createCursorCodec(key: Buffer): CursorCodec {
  const signer = createSigner(key, 'cursor')
  // The MAC of recently signed ids, kept: a page's next cursor is asked for again and again (every
  // client reading the first page gets the same one). A cached value is the exact HMAC, so a cursor
  // is as unforgeable as before; the cap bounds the memory (about 100 bytes an entry).
  const recent = new Map<string, string>()
  const mac = (signed: string) => {
    let value = recent.get(signed)
    if (value === undefined) {
      value = signer.mac(signed)
      if (recent.size >= MAC_CACHE_ENTRIES) recent.clear()
      recent.set(signed, value)
    }
    return value
  }
  const digitsOf = (cursor: string) => Buffer.from(cursor.slice(0, cursor.indexOf('.')), 'base64url').toString('utf8')
  return {
    encode(lastId, position) {
      const digits = String(lastId)
      const head = Buffer.from(digits, 'utf8').toString('base64url')
      if (position === undefined) return `${head}.${mac(digits)}`
      const bytes = Buffer.alloc(8)
      bytes.writeBigUInt64BE(position)
      const part = bytes.toString('base64url')
      return `${head}.${part}.${mac(`${digits}@${part}`)}`
    },
    verify(cursor) {
      const dot = cursor.indexOf('.')
      const lastDot = cursor.lastIndexOf('.')
      if (dot < 0 || cursor.length > 64) return undefined
      const digits = digitsOf(cursor)
      if (!DIGITS.test(digits) || Buffer.from(digits, 'utf8').toString('base64url') !== cursor.slice(0, dot)) return undefined
      const part = cursor.slice(dot + 1, lastDot)
      if (lastDot !== dot && !POSITION_PART.test(part)) return undefined
      if (!signer.matches(cursor.slice(lastDot + 1), mac(lastDot === dot ? digits : `${digits}@${part}`))) return undefined
      const id = BigInt(digits)
      return isInt64(id) ? id : undefined
    },
    idOf: (verified) => BigInt(digitsOf(verified)),
    positionOf(verified) {
      const dot = verified.indexOf('.')
      const lastDot = verified.lastIndexOf('.')
      return lastDot === dot ? undefined : Buffer.from(verified.slice(dot + 1, lastDot), 'base64url').readBigUInt64BE()
    },
  }
}
