// The signature of cursors (cursor.ts) and consistency tokens (consistency-token.ts): the first 16
// bytes of HMAC-SHA-256 (RFC 2104) of a message under a prefix that names what is signed, so that
// one kind can never pass as the other although both use the database's `cursor` secret.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto'

/** MAC bytes kept: 128 bits, beyond guessing. */
const MAC_BYTES = 16
/** The length of a MAC in base64url (characters). */
export const MAC_CHARACTERS = Math.ceil((MAC_BYTES * 4) / 3)

/** Signs messages of one kind: `mac` is the base64url MAC of `prefix:message`; `matches` compares one in constant time. */
export interface Signer {
  mac(message: string): string
  /** Whether `given` is `expected` (a MAC `mac` made), compared in constant time. */
  matches(given: string, expected: string): boolean
}

/** A signer with `key` (the database's `cursor` secret) for messages under `prefix` (`cursor`, `consistency`). */
export function createSigner(key: Buffer, prefix: string): Signer {
  // A KeyObject made once: createHmac with raw key bytes imports them on every call (about 5× slower).
  const secret = createSecretKey(key)
  return {
    mac: (message) =>
      createHmac('sha256', secret).update(`${prefix}:${message}`).digest().subarray(0, MAC_BYTES).toString('base64url'),
    matches(given, expected) {
      const a = Buffer.from(given, 'utf8')
      const b = Buffer.from(expected, 'utf8')
      return a.length === b.length && timingSafeEqual(a, b)
    },
  }
}
