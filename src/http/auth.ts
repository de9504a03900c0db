// RFC 6750 bearer authentication for every operation under /v1 (SPEC "Authentication"), checked in
// onRequest, before routing outcomes (404/405), parsing and validation, so nothing leaks unauthenticated.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { displayPrefix, hashApiKey, hashesEqual, isGeneratedKey } from '../api-keys.js'
import type { ActiveKeyHash, ApiKeyStore } from '../store/index.js'
import { ApiError } from './errors.js'

/** How often (ms) a running server reloads stored keys: the bound on a revocation taking effect. */
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

/**
 * A KeyVerifier over stored key hashes, cached in memory and reloaded every KEY_REFRESH_MS; a
 * generated key whose prefix is not cached yet (created since the last reload) is looked up once,
 * and a prefix found in no stored key is not looked up again until the next reload (so a flood of
 * made-up keys costs at most one query per prefix per reload).
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
  let byPrefix = groupByPrefix(await store.listActiveKeyHashes())
  let unknownPrefixes = new Set<string>()
  const timer = setInterval(() => {
    store.listActiveKeyHashes().then(
      (keys) => {
        byPrefix = groupByPrefix(keys)
        unknownPrefixes = new Set()
      },
      (error: unknown) => log.warn({ err: error }, 'reloading API keys failed; keeping the previous set'),
    )
  }, refreshMs)
  timer.unref()

  return {
    async verify(key) {
      const hash = hashApiKey(key)
      if (configuredHashes.some((configured) => hashesEqual(configured, hash))) return true
      if (!isGeneratedKey(key)) return false
      const prefix = displayPrefix(key)
      let candidates = byPrefix.get(prefix)
      if (!candidates && !unknownPrefixes.has(prefix)) {
        candidates = (await store.listActiveKeyHashes(prefix)).map((stored) => stored.hash)
        if (candidates.length > 0) byPrefix.set(prefix, candidates)
        else unknownPrefixes.add(prefix)
      }
      return (candidates ?? []).some((stored) => hashesEqual(stored, hash))
    },
    close: () => clearInterval(timer),
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
