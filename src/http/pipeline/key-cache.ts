// The key cache behind bearer authentication (auth.ts): stored key hashes held in memory and reloaded
// every KEY_REFRESH_MS, keys created since the last load read on a miss, and a bounded cache of verdicts,
// so that a key seen since the last reload is answered synchronously and the database stays off the hot path.
import type { FastifyBaseLogger } from 'fastify'
import { displayPrefix, hashApiKey, hashesEqual, isGeneratedKey } from '../../api-keys.js'
import type { ConfiguredKey, KeyScope } from '../../key-grants.js'
import type { ActiveKeyHash, ApiKeyStore } from '../../store/index.js'

/** Pause (ms) between the end of one reload of stored keys and the next: with the reload query, the bound on a revocation taking effect. */
export const KEY_REFRESH_MS = 2000

/**
 * Who a valid key belongs to, as logs and the rate limiter see it (never the key itself), and what
 * it may do: its scope and its own rate limit (key-grants.ts).
 */
export interface KeyIdentity {
  /**
   * `key:ID` for a stored key (its id in `keys list`); `API_KEYS:` and the first CONFIGURED_KEY_ID_HEX
   * hex digits of its SHA-256 for a configured one, so the id follows the key, not its place in the list
   * (nor its scope or rate limit).
   */
  readonly keyId: string
  /** The operations it may use (RFC 6750 §3 `scope`). */
  readonly scope: KeyScope
  /** Its own requests per minute; undefined = RATE_LIMIT_PER_MINUTE, 0 = no limit. */
  readonly rateLimit: number | undefined
}

/**
 * Hex digits of a configured key's SHA-256 in its id: 64 bits, so two keys of one list never share an
 * id (and an idempotency scope), while the id reveals nothing usable about the key.
 */
const CONFIGURED_KEY_ID_HEX = 16

/**
 * The id of an API_KEYS entry (`API_KEYS:` + hex digits of its SHA-256): logs, rate limits and
 * Idempotency-Key records are scoped by it, so reordering the list or rotating a key out never hands
 * one key's records to another.
 */
export function configuredKeyId(key: string): string {
  return `API_KEYS:${hashApiKey(key).slice(0, CONFIGURED_KEY_ID_HEX)}`
}

/** Decides whether a presented key is valid. */
export interface KeyVerifier {
  /**
   * The identity of a stored, unrevoked key or of one of the configured API_KEYS, or undefined for any
   * other key: synchronously when this key was seen since the last reload, else as a promise.
   */
  verify(key: string): KeyIdentity | undefined | Promise<KeyIdentity | undefined>
  /** Periodic reloads that failed since start (the previous set was kept): revocations may be stale. */
  readonly reloadFailures: number
  /** Stops the periodic reload. */
  close(): void
}

/** Most verdicts cached between two reloads by default; past it the cache starts over (a flood of made-up keys). */
export const MAX_CACHED_VERDICTS = 10_000

interface StoredKey {
  hash: string
  identity: KeyIdentity
}

/** The stored keys in memory and the verdicts given since they were loaded. */
interface KeySet {
  stored: Map<string, StoredKey[]> // by display prefix
  lastId: bigint // the largest stored key id loaded
  generation: number // counts full reloads
  verdicts: Map<string, KeyIdentity | false>
  maxVerdicts: number // how many verdicts `verdicts` may hold
}

function addKeys(set: KeySet, keys: ActiveKeyHash[]): void {
  for (const { id, prefix, hash, scope, rateLimit } of keys) {
    const identity: KeyIdentity = { keyId: `key:${id}`, scope, rateLimit }
    set.stored.set(prefix, [...(set.stored.get(prefix) ?? []), { hash, identity }])
    if (id > set.lastId) set.lastId = id
  }
}

function replaceKeys(set: KeySet, keys: ActiveKeyHash[]): void {
  set.stored = new Map()
  set.lastId = 0n
  addKeys(set, keys)
  set.verdicts = new Map()
  set.generation++
}

/**
 * Reads the keys created since the last load. A caller joins the next query that starts after it
 * arrives (`queued`), so a key created before its request is never missed; a full reload that
 * finishes meanwhile starts the query again from the new lastId.
 */
function newKeysReader(store: ApiKeyStore, set: KeySet): () => Promise<void> {
  let running: Promise<void> | undefined
  let queued: Promise<void> | undefined
  const readNewKeys = async () => {
    for (;;) {
      const before = set.generation
      const keys = await store.listActiveKeyHashes(set.lastId)
      if (set.generation === before) {
        addKeys(set, keys)
        if (keys.length > 0) set.verdicts = new Map()
        return
      }
    }
  }
  const newKeysRead = (): Promise<void> => {
    if (!running) {
      running = readNewKeys().finally(() => {
        running = undefined
      })
      return running
    }
    queued ??= running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        queued = undefined
        return newKeysRead()
      })
    return queued
  }
  return newKeysRead
}

/**
 * Runs `reload` once, `ms` milliseconds from now, and returns a function that cancels it. The promise
 * `reload` returns settles once that reload is over and the next one is scheduled; it never rejects.
 */
export type ReloadScheduler = (reload: () => Promise<void>, ms: number) => () => void

/** The default ReloadScheduler: a timer that does not keep the process alive. */
const unrefTimeout: ReloadScheduler = (reload, ms) => {
  const timer = setTimeout(reload, ms)
  timer.unref()
  return () => clearTimeout(timer)
}

/** How createKeyVerifier times its reloads and bounds its cache; each member has a default. */
export interface KeyVerifierOptions {
  /** Pause (ms) between the end of one full reload and the start of the next; KEY_REFRESH_MS by default. */
  refreshMs?: number | undefined
  /** What waits for that pause; an unref'd setTimeout by default (tests pass one they drive). */
  schedule?: ReloadScheduler | undefined
  /** Most verdicts cached between two reloads; MAX_CACHED_VERDICTS by default. */
  maxCachedVerdicts?: number | undefined
}

/** The periodic full reload: the number of failed reloads so far, and how to stop it. */
interface Reloads {
  readonly failures: number
  stop(): void
}

/** Reloads every stored key `refreshMs` after the previous reload ended; a failed reload keeps the previous set. */
function startReloads(
  store: ApiKeyStore,
  set: KeySet,
  log: FastifyBaseLogger,
  { refreshMs = KEY_REFRESH_MS, schedule = unrefTimeout }: KeyVerifierOptions,
): Reloads {
  let cancel: (() => void) | undefined
  let failures = 0
  const reload = () =>
    store
      .listActiveKeyHashes()
      .then(
        (keys) => replaceKeys(set, keys),
        (error: unknown) => {
          failures++
          log.warn({ err: error }, 'reloading API keys failed; keeping the previous set')
        },
      )
      .finally(() => {
        if (cancel) cancel = schedule(reload, refreshMs)
      })
  cancel = schedule(reload, refreshMs)
  return {
    get failures() {
      return failures
    },
    stop() {
      cancel?.()
      cancel = undefined
    },
  }
}

/**
 * The identity of a configured key with this hash or, when the key has the generated shape
 * (`generated`, so that a stored key may have it), of a stored one; hashes compared in constant time.
 */
function findKey(configured: StoredKey[], set: KeySet, key: string, hash: string, generated: boolean): KeyIdentity | undefined {
  for (const candidate of configured) if (hashesEqual(candidate.hash, hash)) return candidate.identity
  if (!generated) return undefined
  for (const candidate of set.stored.get(displayPrefix(key)) ?? [])
    if (hashesEqual(candidate.hash, hash)) return candidate.identity
  return undefined
}

/** Caches a verdict until the next reload (a full cache starts over); returns it. */
function remember(set: KeySet, key: string, verdict: KeyIdentity | undefined): KeyIdentity | undefined {
  if (set.verdicts.size >= set.maxVerdicts) set.verdicts = new Map()
  set.verdicts.set(key, verdict ?? false)
  return verdict
}

/**
 * The verdict on a generated key not in memory, after reading the keys created since the last load.
 * A full reload can end between that read and this verdict and replace the keys it added with a
 * snapshot taken before the key was created; a key not found then is looked up again, from the
 * reload's keys on, so that a new key is never refused for the reload's sake.
 */
async function lookUpNewKey(
  configured: StoredKey[],
  set: KeySet,
  newKeysRead: () => Promise<void>,
  key: string,
  hash: string,
): Promise<KeyIdentity | undefined> {
  for (;;) {
    const generation = set.generation
    await newKeysRead()
    const identity = findKey(configured, set, key, hash, true)
    if (identity || set.generation === generation) return remember(set, key, identity)
  }
}

/**
 * A KeyVerifier over stored key hashes, held in memory and reloaded every KEY_REFRESH_MS (one reload
 * at a time; `options` may change the pause and what waits for it). Each presented key is hashed once and its verdict cached until the next reload, so a
 * revoked key stops working within KEY_REFRESH_MS plus one reload query. A generated key that is not
 * in memory may have been created since the last reload: the verifier then reads the keys created
 * since (by id), one such query at a time, shared by every request waiting for it, and started after
 * the first request presenting each key arrived (later ones for the same key share its lookup); so a
 * new key works at once however many made-up keys arrive with it, and those cost at most one small
 * query in flight. `configuredKeys` (API_KEYS) are hashed here and never
 * stored. Hashes are compared in constant time. Resolves once the first load is done; rejects if the
 * store cannot be read. Each identity carries its key's scope and rate limit, stored or configured.
 */
export async function createKeyVerifier(
  store: ApiKeyStore,
  configuredKeys: readonly ConfiguredKey[],
  log: FastifyBaseLogger,
  options: KeyVerifierOptions = {},
): Promise<KeyVerifier> {
  // A key that is neither generated (`ask_…`) nor as long as a configured one cannot be valid: it is
  // refused without hashing or caching, so long made-up tokens cannot fill the verdict cache.
  const configuredLengths = new Set(configuredKeys.map(({ key }) => key.length))
  const configured: StoredKey[] = configuredKeys.map(({ key, scope, rateLimit }) => ({
    hash: hashApiKey(key),
    identity: { keyId: configuredKeyId(key), scope, rateLimit },
  }))
  const maxVerdicts = options.maxCachedVerdicts ?? MAX_CACHED_VERDICTS
  const set: KeySet = { stored: new Map(), lastId: 0n, generation: 0, verdicts: new Map(), maxVerdicts }
  replaceKeys(set, await store.listActiveKeyHashes())
  const newKeysRead = newKeysReader(store, set)
  // The lookup under way for each key missed: a key is created before anyone can present it (256
  // random bits), so the lookup the first request started, after it arrived, sees it too.
  const lookups = new Map<string, Promise<KeyIdentity | undefined>>()
  const reloads = startReloads(store, set, log, options)

  return {
    verify(key) {
      const cached = set.verdicts.get(key)
      if (cached !== undefined) return cached || undefined
      const generated = isGeneratedKey(key)
      if (!generated && !configuredLengths.has(key.length)) return undefined
      const hash = hashApiKey(key)
      const identity = findKey(configured, set, key, hash, generated)
      if (identity || !generated) return remember(set, key, identity)
      let lookup = lookups.get(key)
      if (!lookup) {
        lookup = lookUpNewKey(configured, set, newKeysRead, key, hash).finally(() => lookups.delete(key))
        lookups.set(key, lookup)
      }
      return lookup
    },
    get reloadFailures() {
      return reloads.failures
    },
    close: () => reloads.stop(),
  }
}
