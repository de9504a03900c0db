// What an API key is allowed, pure: its scope (which operations, RFC 6750 §3 `scope`) and its own
// rate limit (how many requests a minute), the rules `keys create` and API_KEYS entries share. No I/O.

/**
 * The scopes a key may have, least first: `read` lists and reads pets (listPets, getPet); `write`
 * may also create them (createPet). Each scope includes those before it.
 */
export const KEY_SCOPES = ['read', 'write'] as const

/** One of KEY_SCOPES. */
export type KeyScope = (typeof KEY_SCOPES)[number]

/** The scope of a key created or configured without one: what every key could do before scopes existed. */
export const DEFAULT_KEY_SCOPE: KeyScope = 'write'

/** Whether `text` is one of KEY_SCOPES, exactly (lower case). */
export function isKeyScope(text: string): text is KeyScope {
  return (KEY_SCOPES as readonly string[]).includes(text)
}

/** Whether a key of scope `held` may use an operation that needs `required` (a scope includes the ones before it). */
export function grants(held: KeyScope, required: KeyScope): boolean {
  return KEY_SCOPES.indexOf(held) >= KEY_SCOPES.indexOf(required)
}

/** Largest rate limit, in requests per minute, of a key or of RATE_LIMIT_PER_MINUTE (0 = no limit). */
export const MAX_RATE_LIMIT_PER_MINUTE = 10_000_000

/** What a key's own rate limit must be, for error messages. */
export const RATE_LIMIT_RULE = `an integer from 0 to ${MAX_RATE_LIMIT_PER_MINUTE} (requests per minute; 0 = no limit)`

/**
 * A key's own rate limit from its decimal text (digits only, no sign, no exponent), in requests per
 * minute; undefined when it is not 0 to MAX_RATE_LIMIT_PER_MINUTE.
 */
export function parseRateLimit(text: string): number | undefined {
  if (!/^\d{1,8}$/.test(text)) return undefined
  const perMinute = Number(text)
  return perMinute <= MAX_RATE_LIMIT_PER_MINUTE ? perMinute : undefined
}

/**
 * What a key may do: its scope, and its own rate limit in requests per minute (undefined: the
 * service's RATE_LIMIT_PER_MINUTE; 0: no limit).
 */
export interface KeyGrants {
  readonly scope: KeyScope
  readonly rateLimit: number | undefined
}

/** One API_KEYS entry: the key (never logged) and what it may do. */
export interface ConfiguredKey extends KeyGrants {
  readonly key: string
}
