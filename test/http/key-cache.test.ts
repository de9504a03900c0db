// The key cache (src/http/pipeline/key-cache.ts) on its own: no server, no database. Its store is an
// ApiKeyStore kept in memory here, whose answers the test holds back, releases or fails; its reloads
// wait on a scheduler the test fires and awaits, so no test sleeps.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { pino } from 'pino'
import { generateApiKey } from '../../src/api-keys.js'
import {
  configuredKeyId,
  createKeyVerifier,
  KEY_REFRESH_MS,
  type KeyVerifier,
  type KeyVerifierOptions,
  MAX_CACHED_VERDICTS,
  type ReloadScheduler,
} from '../../src/http/pipeline/key-cache.js'
import { type ConfiguredKey, DEFAULT_KEY_SCOPE, type KeyGrants } from '../../src/key-grants.js'
import type { ActiveKeyHash, ApiKeyRecord, ApiKeyStore } from '../../src/store/index.js'

/**
 * The ApiKeyStore interface in memory. Each listActiveKeyHashes call reads the keys as they are when
 * it is made (as a query's snapshot) and records its `afterId` in `lookups`; while `hold()` is on, its
 * answer waits for `release()`; `failNext()` makes the next call fail.
 */
class MemoryKeyStore implements ApiKeyStore {
  readonly lookups: Array<bigint | undefined> = []
  #keys: Array<ActiveKeyHash & { revoked: boolean }> = []
  #held: Array<() => void> | undefined
  #failure: Error | undefined

  /** Stores a new generated key (or the one given) with `grants`; returns the key and its id. */
  create({ key, prefix, hash } = generateApiKey(), grants: KeyGrants = DEFAULT_GRANTS): { key: string; id: bigint } {
    const id = BigInt(this.#keys.length + 1)
    this.#keys.push({ id, prefix, hash, ...grants, revoked: false })
    return { key, id }
  }

  revoke(id: bigint): void {
    const key = this.#keys.find((candidate) => candidate.id === id)
    assert.ok(key, `key ${id} exists`)
    key.revoked = true
  }

  hold(): void {
    this.#held = []
  }

  /** Answers the held calls, in the order they were made or in `order` (their indices), and stops holding. */
  release(order?: number[]): void {
    const held = this.#held ?? []
    this.#held = undefined
    for (const index of order ?? held.keys()) held[index]?.()
  }

  failNext(error: Error): void {
    this.#failure = error
  }

  listActiveKeyHashes(afterId?: bigint): Promise<ActiveKeyHash[]> {
    this.lookups.push(afterId)
    const failure = this.#failure
    this.#failure = undefined
    const rows = this.#keys
      .filter((key) => !key.revoked && (afterId === undefined || key.id > afterId))
      .map(({ revoked: _revoked, ...key }) => key)
    const answer = () => (failure ? Promise.reject(failure) : Promise.resolve(rows))
    const held = this.#held
    if (!held) return answer()
    return new Promise((resolve) => held.push(() => resolve(answer())))
  }

  insertApiKey(): Promise<ApiKeyRecord> {
    throw new Error('not used by the key cache')
  }
  listApiKeys(): Promise<ApiKeyRecord[]> {
    throw new Error('not used by the key cache')
  }
  hasAnyApiKey(): Promise<boolean> {
    throw new Error('not used by the key cache')
  }
  revokeApiKey(): Promise<ApiKeyRecord | undefined> {
    throw new Error('not used by the key cache')
  }
}

/** A ReloadScheduler the test drives: it keeps the one reload scheduled, and `fire()` runs it as its timer would. */
function manualScheduler() {
  let pending: { reload: () => Promise<void>; ms: number } | undefined
  const schedule: ReloadScheduler = (reload, ms) => {
    const entry = { reload, ms }
    pending = entry
    return () => {
      if (pending === entry) pending = undefined
    }
  }
  return {
    schedule,
    /** The delay (ms) of the reload scheduled now, or undefined when none is. */
    get delay() {
      return pending?.ms
    },
    /** Starts the scheduled reload; the promise settles once it is over and the next one is scheduled. */
    fire(): Promise<void> {
      const entry = pending
      assert.ok(entry, 'a reload is scheduled')
      pending = undefined
      return entry.reload()
    },
  }
}

/** A verifier over `store`, its reloads fired by the test, its warnings collected as parsed log lines. */
async function verifierOver(store: MemoryKeyStore, configuredKeys: ConfiguredKey[] = [], options: KeyVerifierOptions = {}) {
  const scheduler = manualScheduler()
  const warnings: Array<{ msg: string; err?: { message: string } }> = []
  const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line)) })
  const verifier = await createKeyVerifier(store, configuredKeys, log, { schedule: scheduler.schedule, ...options })
  return { verifier, scheduler, warnings }
}

/** What a key may do unless told otherwise (scope `write`, the service's rate limit). */
const DEFAULT_GRANTS: KeyGrants = { scope: DEFAULT_KEY_SCOPE, rateLimit: undefined }

/** The identity of the stored key with id `id` and `grants`. */
const storedIdentity = (id: bigint, grants: KeyGrants = DEFAULT_GRANTS) => ({ keyId: `key:${id}`, ...grants })

/** An API_KEYS entry of `key` with `grants`. */
const configuredEntry = (key: string, grants: KeyGrants = DEFAULT_GRANTS): ConfiguredKey => ({ key, ...grants })

/** The verdict, required to be given synchronously (from memory, no lookup). */
function verifyNow(verifier: KeyVerifier, key: string) {
  const verdict = verifier.verify(key)
  assert.ok(!(verdict instanceof Promise), 'answered synchronously')
  return verdict
}

/** The verdict, required to need a lookup (a promise). */
function verifyLater(verifier: KeyVerifier, key: string) {
  const verdict = verifier.verify(key)
  assert.ok(verdict instanceof Promise, 'answered after a lookup')
  return verdict
}

describe('key cache (createKeyVerifier)', () => {
  it('accepts a stored key and a configured key from memory, and refuses others', async () => {
    const store = new MemoryKeyStore()
    const stored = store.create()
    const configured = 'configured-key-of-32-characters!'
    const { verifier } = await verifierOver(store, [configuredEntry(configured)])
    assert.deepEqual(verifyNow(verifier, stored.key), storedIdentity(stored.id))
    assert.deepEqual(verifyNow(verifier, configured), { keyId: configuredKeyId(configured), ...DEFAULT_GRANTS })
    assert.equal(verifyNow(verifier, 'x'.repeat(configured.length)), undefined)
    assert.equal(verifyNow(verifier, 'not a key of any configured length'), undefined)
    assert.deepEqual(store.lookups, [undefined], 'only the first load read the store')
    verifier.close()
  })

  it("carries each key's scope and rate limit, stored or configured, also for a key read after the last reload", async () => {
    const store = new MemoryKeyStore()
    const readOnly = store.create(generateApiKey(), { scope: 'read', rateLimit: 30 })
    const configured = 'configured-key-of-32-characters!'
    const { verifier } = await verifierOver(store, [configuredEntry(configured, { scope: 'read', rateLimit: 0 })])
    assert.deepEqual(verifyNow(verifier, readOnly.key), storedIdentity(readOnly.id, { scope: 'read', rateLimit: 30 }))
    assert.deepEqual(verifyNow(verifier, configured), { keyId: configuredKeyId(configured), scope: 'read', rateLimit: 0 })
    const created = store.create(generateApiKey(), { scope: 'write', rateLimit: 5 })
    assert.deepEqual(await verifyLater(verifier, created.key), storedIdentity(created.id, { scope: 'write', rateLimit: 5 }))
    verifier.close()
  })

  it('schedules each reload refreshMs after the previous one ended (KEY_REFRESH_MS by default)', async () => {
    const store = new MemoryKeyStore()
    const byDefault = await verifierOver(store)
    assert.equal(byDefault.scheduler.delay, KEY_REFRESH_MS)
    byDefault.verifier.close()
    const { verifier, scheduler } = await verifierOver(store, [], { refreshMs: 50 })
    assert.equal(scheduler.delay, 50)
    await scheduler.fire()
    assert.deepEqual(store.lookups, [undefined, undefined, undefined], 'two first loads, then one full reload')
    assert.equal(scheduler.delay, 50, 'the next reload is scheduled')
    verifier.close()
    assert.equal(scheduler.delay, undefined, 'close() cancels it')
  })

  it('refuses a revoked key from the next reload on, not before', async () => {
    const store = new MemoryKeyStore()
    const key = store.create()
    const { verifier, scheduler } = await verifierOver(store)
    assert.ok(verifyNow(verifier, key.key))
    store.revoke(key.id)
    assert.ok(verifyNow(verifier, key.key), 'still accepted until the reload')
    await scheduler.fire()
    assert.equal(await verifyLater(verifier, key.key), undefined)
    assert.equal(verifyNow(verifier, key.key), undefined, 'the refusal is remembered')
    verifier.close()
  })

  it('schedules no reload after close(), even when one was in flight', async () => {
    const store = new MemoryKeyStore()
    const { verifier, scheduler } = await verifierOver(store)
    store.hold()
    const reload = scheduler.fire()
    verifier.close()
    store.release()
    await reload
    assert.equal(scheduler.delay, undefined)
  })

  it('looks a key created since the last reload up once for concurrent requests presenting it', async () => {
    const store = new MemoryKeyStore()
    const { verifier } = await verifierOver(store)
    const key = store.create()
    store.hold()
    const verdicts = [verifyLater(verifier, key.key), verifyLater(verifier, key.key), verifyLater(verifier, key.key)]
    store.release()
    assert.deepEqual(
      await Promise.all(verdicts),
      [0, 1, 2].map(() => storedIdentity(key.id)),
    )
    assert.deepEqual(store.lookups, [undefined, 0n], 'one lookup of the keys created since')
    assert.deepEqual(verifyNow(verifier, key.key), storedIdentity(key.id))
    verifier.close()
  })

  it('reads new keys again, after the lookup in flight, for a key presented while it runs', async () => {
    const store = new MemoryKeyStore()
    const { verifier } = await verifierOver(store)
    for (const round of [1, 2]) {
      store.hold()
      const madeUp = verifyLater(verifier, generateApiKey().key) // its lookup reads now
      const key = store.create() // so that lookup cannot see this key
      const verdict = verifyLater(verifier, key.key)
      store.release()
      assert.equal(await madeUp, undefined)
      assert.deepEqual(await verdict, storedIdentity(key.id), `round ${round}`)
    }
    assert.deepEqual(store.lookups, [undefined, 0n, 0n, 1n, 1n])
    verifier.close()
  })

  it('answers an unknown key from memory until the next reload, which finds it if it was created meanwhile', async () => {
    const store = new MemoryKeyStore()
    const existing = store.create()
    const { verifier, scheduler } = await verifierOver(store)
    const unknown = generateApiKey()
    assert.equal(await verifyLater(verifier, unknown.key), undefined)
    assert.deepEqual(store.lookups, [undefined, existing.id])
    assert.equal(verifyNow(verifier, unknown.key), undefined)
    const created = store.create(unknown)
    assert.equal(verifyNow(verifier, unknown.key), undefined, 'the refusal stands until the reload')
    assert.deepEqual(store.lookups, [undefined, existing.id], 'no lookup meanwhile')
    await scheduler.fire()
    assert.deepEqual(verifyNow(verifier, unknown.key), storedIdentity(created.id))
    verifier.close()
  })

  it('forgets its refusals when a lookup finds keys created since', async () => {
    const store = new MemoryKeyStore()
    const { verifier } = await verifierOver(store)
    const refused = generateApiKey()
    assert.equal(await verifyLater(verifier, refused.key), undefined)
    const created = store.create(refused)
    const other = store.create()
    assert.deepEqual(await verifyLater(verifier, other.key), storedIdentity(other.id))
    assert.deepEqual(verifyNow(verifier, refused.key), storedIdentity(created.id))
    verifier.close()
  })

  it('accepts a key created during a reload in flight when the reload ends first', async () => {
    const store = new MemoryKeyStore()
    const { verifier, scheduler } = await verifierOver(store)
    store.hold()
    const reload = scheduler.fire() // its snapshot has no key yet
    const key = store.create()
    const verdict = verifyLater(verifier, key.key)
    store.release([0, 1]) // the reload ends, then the lookup of new keys, which reads again after it
    assert.deepEqual(await verdict, storedIdentity(key.id))
    await reload
    assert.deepEqual(store.lookups, [undefined, undefined, 0n, 0n])
    assert.deepEqual(verifyNow(verifier, key.key), storedIdentity(key.id))
    verifier.close()
  })

  it('accepts a key created during a reload in flight when the lookup ends first', async () => {
    const store = new MemoryKeyStore()
    const { verifier, scheduler } = await verifierOver(store)
    store.hold()
    const reload = scheduler.fire()
    const key = store.create()
    const verdict = verifyLater(verifier, key.key)
    store.release([1, 0]) // the lookup of new keys ends, then the reload that did not see the key
    assert.deepEqual(await verdict, storedIdentity(key.id))
    await reload
    assert.deepEqual(store.lookups, [undefined, undefined, 0n, 0n], 'the key was looked up again after the reload')
    assert.deepEqual(verifyNow(verifier, key.key), storedIdentity(key.id))
    verifier.close()
  })

  it('refuses a key whose lookup ends after a reload that saw it revoked', async () => {
    const store = new MemoryKeyStore()
    const { verifier, scheduler } = await verifierOver(store)
    const key = store.create()
    store.hold()
    const verdict = verifyLater(verifier, key.key) // its lookup's snapshot has the key
    store.revoke(key.id)
    const reload = scheduler.fire() // this one's has it revoked
    store.release([1, 0])
    assert.equal(await verdict, undefined, 'the lookup read again after the reload')
    await reload
    verifier.close()
  })

  it('rejects the requests waiting on a lookup that fails, and looks up again at the next miss', async () => {
    const store = new MemoryKeyStore()
    const { verifier } = await verifierOver(store)
    const key = store.create()
    store.failNext(new Error('database unreachable'))
    await assert.rejects(verifyLater(verifier, key.key), /database unreachable/)
    assert.deepEqual(await verifyLater(verifier, key.key), storedIdentity(key.id))
    verifier.close()
  })

  it('keeps serving the last good set when a reload fails, and counts the failure', async () => {
    const store = new MemoryKeyStore()
    const revoked = store.create()
    const unseen = store.create()
    const { verifier, scheduler, warnings } = await verifierOver(store)
    assert.ok(verifyNow(verifier, revoked.key))
    store.revoke(revoked.id)
    store.failNext(new Error('database unreachable'))
    await scheduler.fire()
    assert.equal(verifier.reloadFailures, 1)
    assert.deepEqual(
      warnings.map(({ msg, err }) => [msg, err?.message]),
      [['reloading API keys failed; keeping the previous set', 'database unreachable']],
    )
    assert.ok(verifyNow(verifier, revoked.key), 'the revocation is not seen yet')
    assert.deepEqual(verifyNow(verifier, unseen.key), storedIdentity(unseen.id), 'the last good set is kept')
    await scheduler.fire()
    assert.equal(verifier.reloadFailures, 1)
    assert.equal(await verifier.verify(revoked.key), undefined, 'the next good reload applies it')
    verifier.close()
  })

  it('keeps at most maxCachedVerdicts verdicts (MAX_CACHED_VERDICTS by default), then starts over', async () => {
    assert.equal(MAX_CACHED_VERDICTS, 10_000)
    const store = new MemoryKeyStore()
    const configured = 'configured-key-of-32-characters!'
    const { verifier } = await verifierOver(store, [configuredEntry(configured)], { maxCachedVerdicts: 4 })
    const unknown = generateApiKey().key
    assert.equal(await verifyLater(verifier, unknown), undefined)
    const madeUp = (i: number) => String(i).padStart(configured.length, '-') // as long as a configured key
    for (const i of [1, 2, 3]) assert.equal(verifyNow(verifier, madeUp(i)), undefined)
    assert.equal(verifyNow(verifier, 'too short to be any key'), undefined) // neither hashed nor cached
    assert.equal(verifyNow(verifier, unknown), undefined, 'the cache is full, not over')
    assert.equal(verifyNow(verifier, madeUp(4)), undefined)
    assert.equal(await verifyLater(verifier, unknown), undefined, 'the cache started over')
    assert.equal(store.lookups.length, 3)
    verifier.close()
  })
})
