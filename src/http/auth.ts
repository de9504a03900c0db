// RFC 6750 bearer authentication (docs/specification.md, Authentication) for every route not marked
// public, checked in onRequest (app.ts), before routing outcomes (404/405), parsing and validation.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { displayPrefix, hashApiKey, hashesEqual, isGeneratedKey } from '../api-keys.js'
import type { ActiveKeyHash, ApiKeyStore } from '../store/index.js'
import { ApiError } from './errors.js'

/** Pause (ms) between the end of one reload of stored keys and the next: with the reload query, the bound on a revocation taking effect. */
export const KEY_REFRESH_MS = 2000

/** RFC 6750 §3 challenge realm. */
const REALM = 'Bearer realm="animal-store"'
// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i

/** Decides whether a presented key is valid. */
export interface KeyVerifier {
  /** Resolves true for a stored, unrevoked key or one of the configured API_KEYS. */
  verify(key: string): Promise<boolean>
  /** Stops the periodic reload. */
  close(): void
}

/** Most prefixes looked up on demand per reload; past it, unseen prefixes wait for the next reload. */
const MAX_LOOKUPS_PER_RELOAD = 1000

/**
 * A KeyVerifier over stored key hashes, cached in memory and reloaded every KEY_REFRESH_MS (one
 * reload at a time, so an older list never replaces a newer one). A generated key whose prefix is not
 * cached yet (created since the last reload) is looked up once; at most MAX_LOOKUPS_PER_RELOAD such
 * lookups run per reload, so a flood of made-up keys cannot occupy the database. A lookup that
 * finishes after a newer reload is used for that request only, so a revocation is never undone.
 * `configuredKeys` (API_KEYS) are hashed here and never stored. Hashes are compared in constant time.
 * Resolves once the first load is done; rejects if the store cannot be read.
 */
export async function createKeyVerifier(
  store: ApiKeyStore,
  configuredKeys: readonly string[],
  log: FastifyBaseLogger,
  refreshMs = KEY_REFRESH_MS,
): Promise<KeyVerifier> {
  const configuredHashes = configuredKeys.map(hashApiKey)
  let cache = { byPrefix: groupByPrefix(await store.listActiveKeyHashes()), lookedUp: new Set<string>() }
  let timer: NodeJS.Timeout | undefined
  const reloadLater = () => {
    timer = setTimeout(() => {
      store
        .listActiveKeyHashes()
        .then(
          (keys) => {
            cache = { byPrefix: groupByPrefix(keys), lookedUp: new Set() }
          },
          (error: unknown) => log.warn({ err: error }, 'reloading API keys failed; keeping the previous set'),
        )
        .finally(() => {
          if (timer) reloadLater()
        })
    }, refreshMs)
    timer.unref()
  }
  reloadLater()

  return {
    async verify(key) {
      const hash = hashApiKey(key)
      if (configuredHashes.some((configured) => hashesEqual(configured, hash))) return true
      if (!isGeneratedKey(key)) return false
      const prefix = displayPrefix(key)
      const current = cache
      let candidates = current.byPrefix.get(prefix)
      if (!candidates && !current.lookedUp.has(prefix) && current.lookedUp.size < MAX_LOOKUPS_PER_RELOAD) {
        current.lookedUp.add(prefix)
        candidates = (await store.listActiveKeyHashes(prefix)).map((stored) => stored.hash)
        if (candidates.length > 0 && cache === current) current.byPrefix.set(prefix, candidates)
      }
      return (candidates ?? []).some((stored) => hashesEqual(stored, hash))
    },
    close: () => {
      clearTimeout(timer)
      timer = undefined
    },
  }
}

function groupByPrefix(keys: ActiveKeyHash[]): Map<string, string[]> {
  const map = new Map<string, string[]>()
  for (const { prefix, hash } of keys) map.set(prefix, [...(map.get(prefix) ?? []), hash])
  return map
}

/**
 * Throws ApiError `missing_api_key` (no bearer credentials) or `invalid_api_key` (RFC 6750
 * `error="invalid_token"`), each with a `WWW-Authenticate` challenge; resolves to the key's SHA-256
 * hash (hex), which identifies the client without holding the secret, when the key is valid.
 */
export async function authenticate(request: FastifyRequest, verifier: KeyVerifier): Promise<string> {
  const header = request.headers.authorization
  if (header === undefined || !/^bearer\s+\S/i.test(header)) {
    throw new ApiError('missing_api_key', { headers: { 'www-authenticate': REALM } })
  }
  const key = BEARER.exec(header)?.[1]
  if (key === undefined || !(await verifier.verify(key))) {
    throw new ApiError('invalid_api_key', {
      headers: { 'www-authenticate': `${REALM}, error="invalid_token", error_description="The API key is not valid"` },
    })
  }
  return hashApiKey(key)
}
