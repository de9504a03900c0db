// How guessable a configured API key (API_KEYS) is: a length floor and an entropy estimate that
// refuses repeated, alternating and sequential values, which a length check alone lets through.

/**
 * Fewest characters a configured key may have (as before this estimate was added: keys that worked
 * keep working unless they are patterns).
 */
export const MIN_CONFIGURED_KEY_LENGTH = 16

/**
 * Least estimated entropy, in bits, a configured key must have (estimateEntropyBits): a floor that
 * refuses patterns (repeated, alternating, sequential: 0 to about 20 bits), not a strength
 * guarantee; 16 random base64url characters score about 45, 32 about 110.
 */
export const MIN_CONFIGURED_KEY_BITS = 40

/**
 * A conservative estimate of `key`'s entropy in bits: the smaller of two empirical Shannon totals,
 * (1) over its characters and (2) over the steps between neighbouring characters (code point
 * differences). Each total is n × H, where H = −Σ p·log2(p) over the observed frequencies. (1)
 * catches few distinct characters (`aaaa…` 0 bits, `abab…` 16); (2) catches runs and patterns made
 * of many characters (`0123456789abcdef` has 64 by (1) but about 5 by (2)). A random base64url key
 * of 16 characters scores about 45 by both; 43 random characters score about 200.
 */
export function estimateEntropyBits(key: string): number {
  const characters = [...key]
  const steps = characters
    .slice(1)
    .map((character, index) => (character.codePointAt(0) ?? 0) - (characters[index]?.codePointAt(0) ?? 0))
  return Math.min(shannonTotal(characters), shannonTotal(steps))
}

/** Whether `key` is long and varied enough to be used as a configured API key (see above). */
export function isStrongEnough(key: string): boolean {
  return key.length >= MIN_CONFIGURED_KEY_LENGTH && estimateEntropyBits(key) >= MIN_CONFIGURED_KEY_BITS
}

function shannonTotal(symbols: ReadonlyArray<string | number>): number {
  const counts = new Map<string | number, number>()
  for (const symbol of symbols) counts.set(symbol, (counts.get(symbol) ?? 0) + 1)
  let bits = 0
  for (const count of counts.values()) bits -= count * Math.log2(count / symbols.length)
  return bits
}
