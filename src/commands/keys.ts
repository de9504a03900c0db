// `animal-store keys create|list|revoke`: API key management against the configured database.
// Keys are shown once, at creation; only their SHA-256 hash and display prefix are stored.
import { generateApiKey } from '../api-keys.js'
import type { Config } from '../config.js'
import { INT64_MAX } from '../int64.js'
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

/** Creates and stores a key named `name`; resolves to the key (the only time it exists in clear). */
export async function createKey(store: ApiKeyStore, name: string): Promise<{ key: string; record: ApiKeyRecord }> {
  const { key, prefix, hash } = generateApiKey()
  const record = await store.insertApiKey({ name, prefix, hash, createdAt: new Date().toISOString() })
  return { key, record }
}

/** On first start (no key ever stored): creates one named `first-key`; resolves to it, else undefined. */
export async function createFirstKeyIfNone(store: ApiKeyStore): Promise<string | undefined> {
  if (await store.hasAnyApiKey()) return undefined
  return (await createKey(store, 'first-key')).key
}

/**
 * `keys create --name NAME`: prints the new key once, with its id. Throws, storing nothing, unless the
 * name is 1 to KEY_NAME_MAX_LENGTH printable characters (key-names.ts); the message does not repeat it.
 */
export async function keysCreate(config: Config, name: string, out: NodeJS.WritableStream): Promise<void> {
  if (name.trim() === '') throw new Error('--name must not be empty')
  if (!isValidKeyName(name)) {
    throw new Error(
      `--name must be 1 to ${KEY_NAME_MAX_LENGTH} printable characters (no line breaks, tabs or other control characters)`,
    )
  }
  const { key, record } = await withStore(config, (store) => createKey(store.apiKeys, name))
  out.write(`Created API key ${record.id} (${escapeForTerminal(record.name)}). Store it now; it is not shown again:\n${key}\n`)
}

/**
 * `keys list`: one row per key: id, name, prefix, created, revoked; never a key. Names are escaped
 * (escapeForTerminal), so a name stored before the naming rule cannot add or alter rows.
 */
export async function keysList(config: Config, out: NodeJS.WritableStream): Promise<void> {
  const records = await withStore(config, (store) => store.apiKeys.listApiKeys())
  const rows = [
    ['ID', 'NAME', 'PREFIX', 'CREATED', 'REVOKED'],
    ...records.map((r) => [String(r.id), escapeForTerminal(r.name), `${r.prefix}…`, r.createdAt, r.revokedAt ?? '-']),
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
