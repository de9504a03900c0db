// `animal-store keys create|list|revoke`: API key management against the configured database.
// Keys are shown once, at creation; only their SHA-256 hash and display prefix are stored.
import { generateApiKey } from '../api-keys.js'
import type { Config } from '../config.js'
import { INT64_MAX } from '../int64.js'
import { DEFAULT_KEY_SCOPE, isKeyScope, KEY_SCOPES, type KeyGrants, parseRateLimit, RATE_LIMIT_RULE } from '../key-grants.js'
import { escapeForTerminal, isValidKeyName, KEY_NAME_MAX_LENGTH } from '../key-names.js'
import { type ApiKeyRecord, type ApiKeyStore, openStore, type Store } from '../store/index.js'

async function withStore<T>(config: Config, run: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(config.database)
  try {
    await store.migrate()
    return await run(store)
  } finally {
    await store.close()
  }
}

/**
 * Creates and stores a key named `name` that may do what `grants` say (by default: scope `write`, the
 * service's rate limit); resolves to the key (the only time it exists in clear).
 */
export async function createKey(
  store: ApiKeyStore,
  name: string,
  grants: KeyGrants = { scope: DEFAULT_KEY_SCOPE, rateLimit: undefined },
): Promise<{ key: string; record: ApiKeyRecord }> {
  const { key, prefix, hash } = generateApiKey()
  const record = await store.insertApiKey({ name, prefix, hash, createdAt: new Date().toISOString(), ...grants })
  return { key, record }
}

/** On first start (no key ever stored): creates one named `first-key`; resolves to it, else undefined. */
export async function createFirstKeyIfNone(store: ApiKeyStore): Promise<string | undefined> {
  if (await store.hasAnyApiKey()) return undefined
  return (await createKey(store, 'first-key')).key
}

/** The options of `keys create` as given on the command line; undefined when not given. */
export interface KeysCreateOptions {
  name: string
  scope?: string | undefined
  rateLimit?: string | undefined
}

/**
 * `keys create --name NAME [--scope read|write] [--rate-limit N]`: prints the new key once, with its
 * id, scope and rate limit. Throws, storing nothing, unless the name is 1 to KEY_NAME_MAX_LENGTH
 * printable characters (key-names.ts; the message does not repeat it), the scope one of KEY_SCOPES and
 * the rate limit RATE_LIMIT_RULE.
 */
export async function keysCreate(config: Config, options: KeysCreateOptions, out: NodeJS.WritableStream): Promise<void> {
  const { name } = options
  if (name.trim() === '') throw new Error('--name must not be empty')
  if (!isValidKeyName(name)) {
    throw new Error(
      `--name must be 1 to ${KEY_NAME_MAX_LENGTH} printable characters (no line breaks, tabs or other control characters)`,
    )
  }
  const grants = grantsOf(options)
  const { key, record } = await withStore(config, (store) => createKey(store.apiKeys, name, grants))
  out.write(
    `Created API key ${record.id} (${escapeForTerminal(record.name)}, scope ${record.scope}, rate limit ${rateLimitText(record)}). Store it now; it is not shown again:\n${key}\n`,
  )
}

/** The grants `keys create` was given; throws naming the option that is not usable. */
function grantsOf({ scope = DEFAULT_KEY_SCOPE, rateLimit: rateLimitOption }: KeysCreateOptions): KeyGrants {
  if (!isKeyScope(scope)) throw new Error(`--scope must be ${KEY_SCOPES.join(' or ')}, not "${escapeForTerminal(scope)}"`)
  const rateLimit = rateLimitOption === undefined ? undefined : parseRateLimit(rateLimitOption)
  if (rateLimitOption !== undefined && rateLimit === undefined) {
    throw new Error(`--rate-limit must be ${RATE_LIMIT_RULE}, not "${escapeForTerminal(rateLimitOption)}"`)
  }
  return { scope, rateLimit }
}

/** A key's rate limit as `keys` prints it: `N/min`, `none` for 0, `default` for the service's RATE_LIMIT_PER_MINUTE. */
function rateLimitText({ rateLimit }: KeyGrants): string {
  if (rateLimit === undefined) return 'default'
  return rateLimit === 0 ? 'none' : `${rateLimit}/min`
}

/**
 * `keys list`: one row per key: id, name, prefix, scope, rate limit (rateLimitText), created, revoked;
 * never a key. Names are escaped (escapeForTerminal), so a name stored before the naming rule cannot
 * add or alter rows.
 */
export async function keysList(config: Config, out: NodeJS.WritableStream): Promise<void> {
  const records = await withStore(config, (store) => store.apiKeys.listApiKeys())
  const rows = [
    ['ID', 'NAME', 'PREFIX', 'SCOPE', 'RATE-LIMIT', 'CREATED', 'REVOKED'],
    ...records.map((r) => [
      String(r.id),
      escapeForTerminal(r.name),
      `${r.prefix}…`,
      r.scope,
      rateLimitText(r),
      r.createdAt,
      r.revokedAt ?? '-',
    ]),
  ]
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? []
  for (const row of rows)
    out.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join('  ')
        .trimEnd()}\n`,
    )
}

/** `keys revoke ID`: revokes the key; a running server refuses it within KEY_REFRESH_MS. */
export async function keysRevoke(config: Config, idText: string, out: NodeJS.WritableStream): Promise<void> {
  if (!/^[1-9]\d{0,18}$/.test(idText) || BigInt(idText) > INT64_MAX) {
    throw new Error(`key id must be a positive integer as shown by \`keys list\`, not "${idText}"`)
  }
  const record = await withStore(config, (store) => store.apiKeys.revokeApiKey(BigInt(idText), new Date().toISOString()))
  if (!record) throw new Error(`no API key has id ${idText}`)
  out.write(`Revoked API key ${record.id} (${escapeForTerminal(record.name)}) at ${record.revokedAt}.\n`)
}
