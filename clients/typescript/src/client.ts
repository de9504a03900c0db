// The hand-written layer over the generated types and openapi-fetch: the operations, exact int64
// (lossless JSON), Link-following pagination, the Idempotency-Key on creates, the consistency token
// on reads, and `withResponse()`.
import LinkHeader from 'http-link-header'
import createFetchClient from 'openapi-fetch'
import { type Conditional, type ConditionalOptions, conditionally } from './conditional.js'
import { AnimalStoreError, type CallContext } from './errors.js'
import type { components, paths } from './generated/schema.js'
import { parseJson, stringifyJson } from './json.js'
import {
  type CallOptions,
  type RequestEvent,
  type ResponseEvent,
  type RetryEvent,
  retryLimit,
  send,
  type TransportOptions,
} from './transport.js'

/** An animal as the service returns it; `id` and `categoryId` are exact bigints. */
export type Pet = components['schemas']['Pet']
/** An animal to add; `status` may be omitted (the service stores `available`). */
export type NewPet = components['schemas']['NewPet']
/** Availability status. */
export type PetStatus = components['schemas']['PetStatus']

/** What `listPets` asks for: `status`, `limit` (1–100; the service's 20 when omitted), `cursor` (a page's `nextCursor`). */
export interface ListQuery {
  status?: PetStatus | undefined
  limit?: number | undefined
  cursor?: string | undefined
}

/** What `pets` and `pages` iterate: as ListQuery, but `limit` is 100 per request unless given. */
export type PetsQuery = ListQuery

/** Iteration's page size when `limit` is not given (the service's maximum: fewest round trips). */
export const DEFAULT_ITERATION_LIMIT = 100

/** One page of `listPets`; `nextCursor` is the cursor of the `Link: rel="next"` page, absent on the last. */
export interface PetPage {
  pets: Pet[]
  nextCursor: string | undefined
}

/** A result with the response it came from (`withResponse()`). */
export interface WithResponse<T> {
  data: T
  /** The response (its body already read): `headers` has RateLimit, Location, Deprecation, … */
  response: Response
  /** The response's X-Request-Id (the one the client sent, echoed). */
  requestId: string
}

/**
 * What every single-request method returns: a promise of the result that can also give the
 * response, as `await store.createPet(pet).withResponse()` → `{ data, response, requestId }`.
 */
export interface ApiPromise<T> extends Promise<T> {
  /** The result with its response, for the headers of a success. */
  withResponse(): Promise<WithResponse<T>>
}

/**
 * Options of createClient. Each optional member may also be given as `undefined`, meaning "not
 * given" (so `{ retries: config.retries }` compiles under `exactOptionalPropertyTypes`).
 */
export interface ClientOptions {
  /** The service's base URL, ending in `/v1`, e.g. `http://127.0.0.1:8080/v1`. */
  baseUrl: string
  /**
   * The API key, sent as `Authorization: Bearer …` on every call. Typed to take an environment
   * variable as it is (`process.env.ANIMAL_STORE_KEY`): createClient throws a TypeError when it is
   * undefined, empty, the text `undefined` or `null`, or not a bearer token (RFC 6750 §2.1:
   * `A-Z a-z 0-9 - . _ ~ + /`, then optional `=`).
   */
  apiKey: string | undefined
  /** Retries after the first attempt on network errors, timeouts, 409, 429, 502, 503 and 504; 4 unless given (0 = none). */
  retries?: number | undefined
  /** Longest pause between attempts when the server gives no Retry-After, in ms; 10,000 unless given. */
  maxBackoffMs?: number | undefined
  /**
   * Longest Retry-After honoured, in ms; 10,000 unless given. A longer one is not waited for: the call
   * throws at once, its AnimalStoreError's `retryAfterMs` saying how long the service asked for.
   */
  maxRetryAfterMs?: number | undefined
  /** Default deadline of each call, retries and waits included, in ms, or false for none; 30,000 unless given. */
  timeoutMs?: number | false | undefined
  /** Timeout of each attempt, in ms, or false for none (then retried like a network error); 10,000 unless given. */
  attemptTimeoutMs?: number | false | undefined
  /** Called as each attempt is sent (for logs, metrics, tracing); awaited. What it throws ends the call. */
  onRequest?: ((event: RequestEvent) => void | Promise<void>) | undefined
  /** Called as each attempt's response arrives, before it is retried or returned; awaited. What it throws ends the call. */
  onResponse?: ((event: ResponseEvent) => void | Promise<void>) | undefined
  /** Called before each retry (for logging or metrics); awaited. What it throws ends the call. */
  onRetry?: ((event: RetryEvent) => void | Promise<void>) | undefined
  /** The fetch implementation; `globalThis.fetch` (called as a function of its own) unless given. */
  fetch?: ((input: string | URL | Request, init?: RequestInit) => Promise<Response>) | undefined
}

/** Options of one createPet call. */
export interface CreateOptions extends CallOptions {
  /**
   * The Idempotency-Key of this logical create (a fresh random UUID unless given). A create that
   * failed carries its key (`error.idempotencyKey`): pass it here to try again later, and the
   * service answers with the first response instead of adding a second animal.
   */
  idempotencyKey?: string | undefined
}

/** The Animal Store client: see createClient. Every method takes CallOptions `{ signal, timeoutMs, requestId, retries }`. */
export interface AnimalStoreClient {
  /** One page of animals in id order (`listPets`). Throws AnimalStoreError on a non-2xx answer. */
  listPets(query?: ListQuery, options?: CallOptions): ApiPromise<PetPage>
  /**
   * Every page matching `query`, in id order, following `Link: rel="next"` (RFC 8288); `limit` is 100
   * unless given. To resume later, keep the `nextCursor` of the last page you finished and pass it as
   * `cursor`. `options` apply to each request. Throws as listPets does.
   */
  pages(query?: PetsQuery, options?: CallOptions): AsyncGenerator<PetPage, void, undefined>
  /** Every animal matching `query`, one by one, over `pages(query, options)`; `cursor` resumes from a page. */
  pets(query?: PetsQuery, options?: CallOptions): AsyncGenerator<Pet, void, undefined>
  /**
   * Adds an animal (`createPet`) and returns it with its id. Sends one Idempotency-Key on every
   * attempt, so a retry after a lost answer cannot add it twice; `response.headers` of a replayed
   * answer has `Idempotent-Replayed: true`. Throws AnimalStoreError, NetworkError or AnimalStoreTimeoutError,
   * each with the `idempotencyKey`.
   */
  createPet(pet: NewPet, options?: CreateOptions): ApiPromise<Pet>
  /**
   * Reads one animal (`getPet`). Throws AnimalStoreError, `pet_not_found` (404) when there is none.
   * @deprecated Sunset: Thu, 05 Dec 2030 00:00:00 GMT (interface 1.0.0 deprecated it on
   * 2026-11-20). Use `pets()` / `listPets()` instead.
   */
  getPet(petId: bigint, options?: CallOptions): ApiPromise<Pet>
  /**
   * listPets, conditionally (RFC 9110 §13.1.2): with `ifNoneMatch` set to the `etag` of the page you
   * hold, resolves `{ notModified: true }` while that page is unchanged (a 304, no body sent).
   */
  listPetsIfChanged(query?: ListQuery, options?: ConditionalOptions): ApiPromise<Conditional<PetPage>>
  /**
   * getPet, conditionally: `{ notModified: true }` while `ifNoneMatch` names the pet you hold.
   * @deprecated Sunset: Thu, 05 Dec 2030 00:00:00 GMT, as getPet.
   */
  getPetIfChanged(petId: bigint, options?: ConditionalOptions): ApiPromise<Conditional<Pet>>
}

/** What a call hands to openapi-fetch: its headers and the transport's fetch. */
type CallInit = { headers: Record<string, string>; fetch: (request: Request) => Promise<Response> }

/** The `fetch` part of a result from openapi-fetch with `parseAs: 'text'`. */
interface TextResult {
  data?: string
  error?: unknown
  response: Response
}

// A promise of `data` that also hands out the whole result. `data` is marked handled: a caller of
// withResponse() awaits `result` itself, and the derived promise must not then reject unobserved.
function apiPromise<T>(result: Promise<WithResponse<T>>): ApiPromise<T> {
  const data = result.then((value) => value.data)
  data.catch(() => {})
  return Object.assign(data, { withResponse: () => result })
}

/** The header of the consistency token (openapi.json: createPet's 201, and the reads' request header). */
const CONSISTENCY_TOKEN = 'consistency-token'
/** A consistency token's form: its position in 16 hex digits, so the later of two is the greater text, then its signature. */
const CONSISTENCY_TOKEN_FORM = /^[0-9A-F]{16}\.[A-Za-z0-9_-]{22}$/

/**
 * The newest consistency token seen: `keep` takes a header's value and keeps it when it is later than
 * the one held (answers can arrive out of order); `forget` drops the one held if it is still `token`.
 */
function consistencyTokens() {
  let newest: string | undefined
  return {
    newest: () => newest,
    keep(token: string | null) {
      if (token === null || !CONSISTENCY_TOKEN_FORM.test(token)) return
      if (newest === undefined || token.slice(0, 16) > newest.slice(0, 16)) newest = token
    },
    forget(token: string) {
      if (newest === token) newest = undefined
    },
  }
}

/** RFC 6750 §2.1 b64token: what a bearer credential may hold. */
const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

// The key as given, or a TypeError saying what is wrong with it (never the key itself: it may be a
// real key with one bad character).
function checkedApiKey(apiKey: string | undefined): string {
  const fix = 'pass the API key the service issued (e.g. `apiKey: process.env.ANIMAL_STORE_KEY`, with it exported)'
  if (apiKey === undefined || apiKey.trim() === '') throw new TypeError(`createClient: apiKey is missing or empty: ${fix}`)
  if (apiKey === 'undefined' || apiKey === 'null')
    throw new TypeError(`createClient: apiKey is the text "${apiKey}", not a key: ${fix}`)
  if (!BEARER_TOKEN.test(apiKey))
    throw new TypeError(`createClient: apiKey is not a bearer token (A-Z a-z 0-9 - . _ ~ + / then optional =): ${fix}`)
  return apiKey
}

/**
 * A client for Animal Store interface 1.0.0. Every call has a deadline (`timeoutMs`, 30 s) and
 * retries on network errors, attempt timeouts, 409 and 429 (waiting Retry-After, up to
 * `maxRetryAfterMs`), and 502, 503 and 504, with exponential backoff and jitter, at most `retries`
 * times; GETs are safe to repeat and createPet carries an Idempotency-Key. Every read sends the
 * latest Consistency-Token a create's answer carried, so it includes this client's own creates
 * (docs/specification.md, Consistency). After the last attempt a
 * non-2xx answer throws AnimalStoreError, a missing answer NetworkError or AnimalStoreTimeoutError;
 * an aborted `signal` rejects with its reason. Throws TypeError at once for a missing or malformed
 * `apiKey`, RangeError for a `retries` that is not a whole number from 0 up.
 */
export function createClient(options: ClientOptions): AnimalStoreClient {
  const apiKey = checkedApiKey(options.apiKey)
  const transport: TransportOptions = {
    retries: retryLimit(options.retries ?? 4, 'retries'),
    maxBackoffMs: options.maxBackoffMs ?? 10_000,
    maxRetryAfterMs: options.maxRetryAfterMs ?? 10_000,
    attemptTimeoutMs: options.attemptTimeoutMs ?? 10_000,
    timeoutMs: options.timeoutMs ?? 30_000,
    onRetry: options.onRetry,
    onRequest: options.onRequest,
    onResponse: options.onResponse,
    // Called as a plain function: browsers throw "Illegal invocation" when window.fetch is called
    // as a method of another object (which is how ky calls the fetch it is given).
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
  }
  const client = createFetchClient<paths>({
    baseUrl: options.baseUrl,
    headers: { authorization: `Bearer ${apiKey}` },
    bodySerializer: stringifyJson,
  })

  // The newest consistency token the service has sent (a createPet's answer carries one when reads
  // may come from replicas), sent on every read so that it includes this client's own creates.
  const consistency = consistencyTokens()

  // Runs one request through the transport and turns its answer into a result or an AnimalStoreError.
  // A read (every call without an Idempotency-Key) carries the consistency token; one the service
  // refuses (its database was replaced) is forgotten, and the read sent again once without it.
  function call<T>(
    callOptions: CallOptions,
    idempotencyKey: string | undefined,
    perform: (init: CallInit) => Promise<TextResult>,
    parse: (text: string, response: Response) => T,
    ifNoneMatch?: string,
  ): ApiPromise<T> {
    const context: CallContext = { requestId: callOptions.requestId ?? crypto.randomUUID(), idempotencyKey }
    const headers: Record<string, string> = { 'x-request-id': context.requestId }
    if (idempotencyKey !== undefined) headers['idempotency-key'] = idempotencyKey
    if (ifNoneMatch !== undefined) headers['if-none-match'] = ifNoneMatch
    const run = async (tokenRefused = false): Promise<WithResponse<T>> => {
      const token = idempotencyKey === undefined ? consistency.newest() : undefined
      if (token !== undefined) headers[CONSISTENCY_TOKEN] = token
      else delete headers[CONSISTENCY_TOKEN]
      const { data, error, response } = await perform({
        headers,
        fetch: (request) => send(request, transport, callOptions, context),
      })
      consistency.keep(response.headers.get(CONSISTENCY_TOKEN))
      // A 304 has no body: an answer only to a conditional call, whose parse expects it.
      const notModified = response.status === 304 && ifNoneMatch !== undefined
      if (data === undefined && !notModified) {
        const failure = new AnimalStoreError(response, error, context)
        if (token !== undefined && !tokenRefused && failure.details?.some((detail) => detail.field === CONSISTENCY_TOKEN)) {
          consistency.forget(token)
          return run(true)
        }
        throw failure
      }
      return { data: parse(data ?? '', response), response, requestId: response.headers.get('x-request-id') ?? context.requestId }
    }
    return apiPromise(run())
  }

  function pageOf(text: string, response: Response): PetPage {
    const next = LinkHeader.parse(response.headers.get('link') ?? '').rel('next')[0]
    const nextCursor = next ? (new URL(next.uri, options.baseUrl).searchParams.get('cursor') ?? undefined) : undefined
    return { pets: parseJson(text) as Pet[], nextCursor }
  }

  function listPets(query: ListQuery = {}, callOptions: CallOptions = {}): ApiPromise<PetPage> {
    return call(callOptions, undefined, (init) => client.GET('/pets', { params: { query }, parseAs: 'text', ...init }), pageOf)
  }

  async function* pages(query: PetsQuery = {}, callOptions: CallOptions = {}): AsyncGenerator<PetPage, void, undefined> {
    let cursor = query.cursor
    do {
      const page = await listPets({ ...query, limit: query.limit ?? DEFAULT_ITERATION_LIMIT, cursor }, callOptions)
      yield page
      cursor = page.nextCursor
    } while (cursor !== undefined)
  }

  return {
    listPets,
    pages,
    async *pets(query = {}, callOptions = {}) {
      for await (const page of pages(query, callOptions)) yield* page.pets
    },
    createPet(pet, createOptions = {}) {
      return call(
        createOptions,
        createOptions.idempotencyKey ?? crypto.randomUUID(),
        (init) => client.POST('/pets', { body: pet, parseAs: 'text', ...init }),
        (text) => parseJson(text) as Pet,
      )
    },
    getPet(petId, callOptions = {}) {
      return call(
        callOptions,
        undefined,
        (init) => client.GET('/pets/{petId}', { params: { path: { petId } }, parseAs: 'text', ...init }),
        (text) => parseJson(text) as Pet,
      )
    },
    listPetsIfChanged(query = {}, { ifNoneMatch, ...callOptions } = {}) {
      const perform = (init: CallInit) => client.GET('/pets', { params: { query }, parseAs: 'text', ...init })
      return call(callOptions, undefined, perform, conditionally(pageOf), ifNoneMatch)
    },
    getPetIfChanged(petId, { ifNoneMatch, ...callOptions } = {}) {
      const perform = (init: CallInit) => client.GET('/pets/{petId}', { params: { path: { petId } }, parseAs: 'text', ...init })
      return call(
        callOptions,
        undefined,
        perform,
        conditionally((text) => parseJson(text) as Pet),
        ifNoneMatch,
      )
    },
  }
}
