// API key names as people read them in a terminal: which names `keys create` stores, and how any
// stored name (also one stored before the rule, or copied in) is printed so it cannot forge output.

/** Most characters (Unicode code points) a key name may have. */
export const KEY_NAME_MAX_LENGTH = 100

/**
 * Characters that do not print as themselves: controls (C0, DEL, C1: line breaks, tabs, ESC of
 * terminal escape sequences), format characters (bidirectional overrides, zero-width characters),
 * line and paragraph separators, and unpaired surrogates.
 */
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u

/** Whether `name` may be stored: 1 to KEY_NAME_MAX_LENGTH characters, none UNPRINTABLE, not only spaces. */
export function isValidKeyName(name: string): boolean {
  const length = [...name].length
  return length >= 1 && length <= KEY_NAME_MAX_LENGTH && name.trim() !== '' && !UNPRINTABLE.test(name)
}

/**
 * `text` safe to print on one line of a terminal: each UNPRINTABLE character becomes `\u{HEX}` (a
 * newline `\u{a}`, ESC `\u{1b}`); printable text, and so every name isValidKeyName accepts, is unchanged.
 */
export function escapeForTerminal(text: string): string {
  return text.replace(new RegExp(UNPRINTABLE.source, 'gu'), (character) => `\\u{${(character.codePointAt(0) ?? 0).toString(16)}}`)
}
