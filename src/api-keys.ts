// API key rules, pure: the key format, generation, hashing and constant-time comparison. No I/O.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** Every generated key starts with this, so secret scanners can find leaked ones. */
const API_KEY_PREFIX = 'ask_'
/** Length of the stored, displayable key prefix: `ask_` plus 8 characters (48 random bits). */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8
const GENERATED_KEY = /^ask_[A-Za-z0-9_-]{43}$/

/** A key as generated: the secret (shown once), its display prefix and its SHA-256 hash (hex). */
export interface GeneratedApiKey {
  key: string
  prefix: string
  hash: string
}

/** A new key: `ask_` + 43 base64url characters (256 random bits). */
export function generateApiKey(): GeneratedApiKey {
  const key = API_KEY_PREFIX + randomBytes(32).toString('base64url')
  return { key, prefix: displayPrefix(key), hash: hashApiKey(key) }
}

/** Whether `key` has the shape of a generated key (and so a stored prefix to look up). */
export function isGeneratedKey(key: string): boolean {
  return GENERATED_KEY.test(key)
}

/** The first DISPLAY_PREFIX_LENGTH characters: safe to store, list and log. */
export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH)
}

/** Lowercase hex SHA-256 of the key's UTF-8 bytes: what is stored in place of the key. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex')
}

/** Compares two hex digests in time independent of where they differ. */
export function hashesEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex')
  const right = Buffer.from(b, 'hex')
  return left.length === right.length && timingSafeEqual(left, right)
}
