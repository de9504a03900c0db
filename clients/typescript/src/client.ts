// The hand-written layer over the generated types and openapi-fetch: exact int64 (lossless JSON),
// typed errors, Link-following pagination, and retries (ky) with an Idempotency-Key on creates.
import LinkHeader from 'http-link-header'
import ky, { HTTPError } from 'ky'
import createFetchClient from 'openapi-fetch'
import { AnimalStoreError } from './errors.js'
import type { components, paths } from './generated/schema.js'
import { parseJson, stringifyJson } from './json.js'

/** An animal as the service returns it; `id` and `categoryId` are exact bigints. */
export type Pet = components['schemas']['Pet']
/** An animal to add; `status` may be omitted (the service stores `available`). */
export type NewPet = components['schemas']['NewPet']
/** Availability status. */
export type PetStatus = components['schemas']['PetStatus']

/** What `listPets` and `pets` filter by: `status`, and `limit` (1–100 per page, 20 when omitted). */
export interface ListQuery {
  status?: PetStatus
  limit?: number
}

/** One page of `listPets`; `nextCursor` is the cursor of the `Link: rel="next"` page, absent on the last. */
export interface PetPage {
  pets: Pet[]
  nextCursor: string | undefined
}

/** Reported to `onRetry` just before a request is sent again. */
export interface RetryEvent {
  /** 1 for the first retry, 2 for the second, … */
  retryCount: number
  /** Why: the network error, or the AnimalStoreError of a 409 / 429 / 503 answer. */
  error: Error
}

/** Options of createClient. */
export interface ClientOptions {
  /** The service's base URL, ending in `/v1`, e.g. `http://127.0.0.1:8080/v1`. */
  baseUrl: string
  /** The API key, sent as `Authorization: Bearer …` on every call. */
  apiKey: string
  /** Retries after the first attempt on network errors, timeouts, 409, 429 and 503; 4 unless given (0 = none). */
  retries?: number
  /** Longest pause between attempts when the server gives no Retry-After, in ms; 10,000 unless given. */
  maxBackoffMs?: number
  /** Longest Retry-After honoured, in ms (a longer one is cut to this); 120,000 unless given. */
  maxRetryAfterMs?: number
  /** Per-attempt timeout in ms, or false for none; 10,000 unless given. */
  timeoutMs?: number | false
  /** Called before each retry (for logging or metrics); awaited. */
  onRetry?: (event: RetryEvent) => void | Promise<void>
  /** The fetch implementation; `globalThis.fetch` unless given. */
  fetch?: typeof globalThis.fetch
}

/** Options of one createPet call. */
export interface CreateOptions {
  /**
   * The Idempotency-Key of this logical create (a fresh random UUID unless given). Pass your own to
   * retry a create across restarts of your process: the service answers a repeat of the same key
   * and body with the stored response instead of adding a second animal.
   */
  idempotencyKey?: string
}

/** The Animal Store client: see createClient. */
export interface AnimalStoreClient {
  /** One page of animals in id order (`listPets`). Throws AnimalStoreError on a non-2xx answer. */
  listPets(query?: ListQuery & { cursor?: string }): Promise<PetPage>
  /**
   * Every animal matching `query`, in id order, following `Link: rel="next"` (RFC 8288) page by page
   * (`limit` animals per request). Throws AnimalStoreError as listPets does.
   */
  pets(query?: ListQuery): AsyncGenerator<Pet, void, undefined>
  /**
   * Adds an animal (`createPet`) and returns it with its id. Sends one Idempotency-Key on every
   * attempt, so a retry after a lost answer cannot add it twice. Throws AnimalStoreError.
   */
  createPet(pet: NewPet, options?: CreateOptions): Promise<Pet>
  /**
   * Reads one animal (`getPet`). Throws AnimalStoreError, `pet_not_found` (404) when there is none.
   * @deprecated Sunset: Thu, 05 Dec 2030 00:00:00 GMT (interface 1.0.0 deprecated it on
   * 2026-11-20). Use `pets()` / `listPets()` instead.
   */
  getPet(petId: bigint): Promise<Pet>
}

/**
 * A client for Animal Store interface 1.0.0. Every call retries on network errors, timeouts, 409
 * and 429 (waiting Retry-After seconds) and 503, with exponential backoff and jitter, at most `retries`
 * times; GETs are safe to repeat and createPet carries an Idempotency-Key. After the last attempt a
 * non-2xx answer throws AnimalStoreError and a network failure throws the fetch error.
 */
export function createClient(options: ClientOptions): AnimalStoreClient {
  const http = ky.create({
    fetch: options.fetch ?? globalThis.fetch,
    timeout: options.timeoutMs ?? 10_000,
    retry: {
      limit: options.retries ?? 4,
      methods: ['get', 'post'],
      // 409: the service is still storing an earlier attempt of this create (idempotency_key_in_flight).
      statusCodes: [409, 429, 503],
      afterStatusCodes: [409, 429, 503],
      maxRetryAfter: options.maxRetryAfterMs ?? 120_000,
      backoffLimit: options.maxBackoffMs ?? 10_000,
      jitter: true,
      retryOnTimeout: true,
    },
    hooks: {
      beforeRetry: [
        async ({ error, retryCount }) => {
          const reason =
            error instanceof HTTPError ? new AnimalStoreError(error.response, await errorBody(error.response)) : error
          await options.onRetry?.({ retryCount, error: reason })
        },
      ],
    },
  })
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    headers: { authorization: `Bearer ${options.apiKey}` },
    bodySerializer: stringifyJson,
    // ky throws on a non-2xx answer once retries are spent; openapi-fetch expects the response.
    fetch: async (request: Request) => {
      try {
        return await http(request)
      } catch (error) {
        if (error instanceof HTTPError) return error.response
        throw error
      }
    },
  })

  async function listPets(query: ListQuery & { cursor?: string } = {}): Promise<PetPage> {
    const { data, error, response } = await client.GET('/pets', { params: { query }, parseAs: 'text' })
    if (data === undefined) throw new AnimalStoreError(response, error)
    const next = LinkHeader.parse(response.headers.get('link') ?? '').rel('next')[0]
    const nextCursor = next ? (new URL(next.uri, options.baseUrl).searchParams.get('cursor') ?? undefined) : undefined
    return { pets: parseJson(data) as Pet[], nextCursor }
  }

  return {
    listPets,
    async *pets(query = {}) {
      let page = await listPets(query)
      yield* page.pets
      while (page.nextCursor !== undefined) {
        page = await listPets({ ...query, cursor: page.nextCursor })
        yield* page.pets
      }
    },
    async createPet(pet, createOptions = {}) {
      const { data, error, response } = await client.POST('/pets', {
        body: pet,
        headers: { 'idempotency-key': createOptions.idempotencyKey ?? crypto.randomUUID() },
        parseAs: 'text',
      })
      if (data === undefined) throw new AnimalStoreError(response, error)
      return parseJson(data) as Pet
    },
    async getPet(petId) {
      const { data, error, response } = await client.GET('/pets/{petId}', { params: { path: { petId } }, parseAs: 'text' })
      if (data === undefined) throw new AnimalStoreError(response, error)
      return parseJson(data) as Pet
    },
  }
}

/** The body of an error response, parsed when it is JSON (a clone: the response stays readable). */
async function errorBody(response: Response): Promise<unknown> {
  const text = await response.clone().text()
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
