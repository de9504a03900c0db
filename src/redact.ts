// Credential redaction for anything the CLI prints: the password of a `scheme://user:password@host`
// URL becomes `***`, wherever the URL appears in the text (a flag echoed back, a driver message).

/** `scheme://user:` then the password, up to the last `@` before the host (unencoded `@` included). */
const URL_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^\s:/?#@]*):[^\s/?#]*@/gi

/**
 * Returns `text` with the password of every URL in it replaced by `***`
 * (`postgres://app:s3cret@db/x` → `postgres://app:***@db/x`); the user name and host stay, to say
 * which database is meant. Text without such a URL comes back unchanged.
 */
export function redactCredentials(text: string): string {
  return text.replace(URL_PASSWORD, '$1:***@')
}
