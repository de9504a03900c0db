// The consistency token (docs/specification.md, Consistency): the WAL position of a create's commit,
// signed, sent in the `Consistency-Token` response header when reads may come from replicas; a read
// that sends it back is served only by a server that has replayed that far. Form: `<the position as
// 16 upper-case hexadecimal digits>.<base64url of the first 16 bytes of HMAC-SHA-256(key,
// "consistency:" + those digits)>`; the key is the database's `cursor` secret (the message prefix keeps
// a token from ever passing as a cursor), so every instance accepts every other's tokens.
import { Type } from '@sinclair/typebox'
import type { Position } from '../../store/index.js'
import { ApiError } from '../errors.js'
import { header } from './responses.js'
import { createSigner, MAC_CHARACTERS } from './signing.js'

/** The header's name, in requests (listPets, getPet) and in createPet's 201. */
export const CONSISTENCY_TOKEN_HEADER = 'Consistency-Token'
/** The same name as Node gives it (lower case; the type checks it is the same name). */
export const CONSISTENCY_TOKEN_FIELD: Lowercase<typeof CONSISTENCY_TOKEN_HEADER> = 'consistency-token'

/** A token's form: the position in 16 hex digits (so the later of two tokens is the greater text), a dot, the MAC. */
const TOKEN_PATTERN = `^[0-9A-F]{16}\\.[A-Za-z0-9_-]{${MAC_CHARACTERS}}$`
const TOKEN = new RegExp(TOKEN_PATTERN)
const TOKEN_LENGTH = 16 + 1 + MAC_CHARACTERS

/** Makes and checks consistency tokens with one key. */
export interface ConsistencyTokens {
  /** The token of `position` (one HMAC). */
  encode(position: Position): string
  /** The position of `token`, or undefined when it is not one this service issued (malformed, altered, or another key's). */
  verify(token: string): Position | undefined
}

/** A codec signing with `key` (HMAC-SHA-256, RFC 2104; the database's `cursor` secret). */
export function createConsistencyTokens(key: Buffer): ConsistencyTokens {
  const signer = createSigner(key, 'consistency')
  return {
    encode(position) {
      const digits = position.toString(16).toUpperCase().padStart(16, '0')
      return `${digits}.${signer.mac(digits)}`
    },
    verify(token) {
      if (token.length !== TOKEN_LENGTH || !TOKEN.test(token)) return undefined
      const digits = token.slice(0, 16)
      return signer.matches(token.slice(17), signer.mac(digits)) ? BigInt(`0x${digits}`) : undefined
    },
  }
}

/**
 * The request header of listPets and getPet: an optional Consistency-Token (its form is checked by
 * validation, 400 `invalid_request` naming the header; its signature by `requestedPosition`).
 */
export const ConsistencyTokenHeaders = Type.Object({
  [CONSISTENCY_TOKEN_HEADER]: Type.Optional(
    Type.String({
      maxLength: TOKEN_LENGTH,
      pattern: TOKEN_PATTERN,
      'x-pattern-message': 'must be a Consistency-Token as a createPet answer carried it',
      description:
        'The newest `Consistency-Token` this client received from createPet, sent back unchanged: the answer then includes that create (and every earlier one), even when it is read from a replica. Tokens are opaque but ordered: of two, the one with the greater text before the dot is the later; keep that one. A token the service did not issue is a 400 naming this header.',
    }),
  ),
})

/** The Consistency-Token of createPet's 201 (docs/specification.md, Consistency). */
export const CONSISTENCY_TOKEN_RESPONSE_HEADER = header(
  'Sent when this deployment reads from replicas: the position of this create. Send it back in `Consistency-Token` on later reads (keep the greatest one, comparing the text before the dot) and they include this animal, whichever instance or replica answers. Absent when every read goes to one database (each then sees every create).',
  { maxLength: TOKEN_LENGTH, pattern: TOKEN_PATTERN },
)

/**
 * The position a read asks for: the verified `token` (undefined when none was sent). Throws
 * ApiError `invalid_request` naming the header when the service did not issue it.
 */
export function requestedPosition(tokens: ConsistencyTokens, token: string | undefined): Position | undefined {
  if (token === undefined) return undefined
  const position = tokens.verify(token)
  if (position === undefined) {
    throw new ApiError('invalid_request', {
      message: 'The request headers are not valid; see details.',
      details: [{ in: 'header', field: CONSISTENCY_TOKEN_FIELD, message: 'is not a token this service issued' }],
    })
  }
  return position
}
