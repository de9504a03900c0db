// The three operations of docs/specification.md, Operations: listPets, createPet, getPet. Thin
// handlers: validation comes from the route schemas; the Pet and Pets bodies come from the PetStore
// as JSON text rendered from the same schema (store/pet-sql.ts, store/pet-json.ts), and are sent as they are.
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply } from 'fastify'
import { INT64_MIN, toBigInt } from '../../int64.js'
import type { KeyScope } from '../../key-grants.js'
import {
  DEFAULT_PAGE_LIMIT,
  DEFAULT_PET_STATUS,
  type ListPetsQuery,
  MAX_PAGE_LIMIT,
  type NewPet,
  PET_STATUSES,
  PetIdParams,
  ListPetsQuery as Query,
} from '../../schemas.js'
import type { CreatedPet, PetDraft, PetStore, Position } from '../../store/index.js'
import { ApiError } from '../errors.js'
import type { KeyIdentity } from '../pipeline/auth.js'
import { contentCodingFor, notModified, type PetTags } from '../pipeline/conditional-requests.js'
import {
  CONSISTENCY_TOKEN_FIELD,
  CONSISTENCY_TOKEN_HEADER,
  CONSISTENCY_TOKEN_RESPONSE_HEADER,
  ConsistencyTokenHeaders,
  type ConsistencyTokens,
  requestedPosition,
} from './consistency-token.js'
import type { CursorCodec } from './cursor.js'
import { DEPRECATION_HEADERS, deprecationHeaders, SUNSET_DATE } from './deprecation.js'
import { fingerprintOf, IDEMPOTENCY_KEY_TTL_MS, IdempotencyHeaders, replayedPetId } from './idempotency.js'
import {
  ConditionalHeaders,
  ETAG_HEADER,
  errorResponses,
  header,
  LINK_BASE_MAX_LENGTH,
  notModifiedResponse,
  successResponse,
} from './responses.js'

/**
 * What the pet routes need: the store, the public base of links (`PUBLIC_URL`, else `/v1`), the
 * cursor codec (the same one the validator checks cursors with), the pets' entity tags and the
 * consistency tokens' codec.
 */
export interface PetRoutesOptions {
  pets: PetStore
  linkBase: string
  cursors: CursorCodec
  tags: PetTags
  tokens: ConsistencyTokens
  /** IDEMPOTENCY_RECORDS_PER_KEY: Idempotency-Key records one API key may hold. */
  idempotencyRecordsPerKey: number
}

/** The media type of the Pet and Pets bodies (RFC 8259: JSON is UTF-8). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'
// The scope each operation needs (key-grants.ts): the request pipeline enforces what these say.
const READ: Array<Record<string, KeyScope[]>> = [{ bearerAuth: ['read'] }]
const WRITE: Array<Record<string, KeyScope[]>> = [{ bearerAuth: ['write'] }]
/** No query parameters: any is refused (400), as on listPets, so a typo never passes silently. */
const NO_QUERY = Type.Object({}, { additionalProperties: false })
/** The request headers of the reads: If-None-Match and Consistency-Token. */
const READ_HEADERS = Type.Object({ ...ConditionalHeaders.properties, ...ConsistencyTokenHeaders.properties })

/** The later of two positions (either may be absent). */
const later = (a: Position | undefined, b: Position | undefined) => (a === undefined || (b !== undefined && b > a) ? b : a)

// The longest next link: the longest base, limit, status and cursor the query schema allows.
const NEXT_LINK_MAX_LENGTH =
  `<${'x'.repeat(LINK_BASE_MAX_LENGTH)}/pets?limit=${MAX_PAGE_LIMIT}&status=${PET_STATUSES.reduce((a, b) => (b.length > a.length ? b : a))}&cursor=${'x'.repeat(Query.properties.cursor.maxLength ?? 0)}>; rel="next"`
    .length

/** Registers listPets, createPet and getPet under `/v1/pets`. */
export async function petRoutes(app: FastifyInstance, options: PetRoutesOptions): Promise<void> {
  listPetsRoute(app, options)
  createPetRoute(app, options)
  getPetRoute(app, options)
}

function listPetsRoute(app: FastifyInstance, { pets, linkBase, cursors, tags, tokens }: PetRoutesOptions): void {
  app.get<{ Querystring: ListPetsQuery; Headers: { 'consistency-token'?: string } }>(
    '/v1/pets',
    {
      schema: {
        operationId: 'listPets',
        summary: 'List animals',
        description:
          'Returns animals ordered by `id` ascending, at most `limit` of them, optionally only those with one `status`. The body is a bare array; when more animals follow, the `Link` header carries the next page (`rel="next"`).',
        tags: ['pets'],
        security: READ,
        querystring: Query,
        headers: READ_HEADERS,
        response: {
          200: successResponse(200, 'Pets', 'Success: a page of animals (possibly empty).', {
            Link: header('RFC 8288 link to the next page, `<…/pets?…&cursor=…>; rel="next"`; absent on the last page.', {
              maxLength: NEXT_LINK_MAX_LENGTH,
            }),
            ETag: ETAG_HEADER,
          }),
          304: notModifiedResponse(),
          ...errorResponses([400, 401, 408, 429, 431, 500, 503]),
        },
      },
    },
    async (request, reply) => {
      const { limit = DEFAULT_PAGE_LIMIT, status, cursor } = request.query
      let afterId: bigint | undefined
      // The position the page must include: the client's newest write, and what the previous page saw.
      let atLeast = requestedPosition(tokens, request.headers[CONSISTENCY_TOKEN_FIELD])
      if (cursor !== undefined) {
        afterId = cursors.idOf(cursor) // verified by the schema's `format: cursor`
        atLeast = later(atLeast, cursors.positionOf(cursor))
      }
      const page = await pets.listPets({ limit, status, afterId, atLeast })
      let next: string | undefined
      let tagged: string | undefined
      if (page.more && page.lastId !== undefined) {
        // limit is digits, status an enum and the cursor base64url and dots: nothing to percent-encode.
        const link = `<${linkBase}/pets?limit=${limit}${status === undefined ? '' : `&status=${status}`}&cursor=`
        next = `${link}${cursors.encode(page.lastId, page.position)}>; rel="next"`
        // The tag covers the next link too (a page whose pets are unchanged but that gained a next
        // page is new), but not the position in its cursor, which moves with every write.
        tagged = page.position === undefined ? next : `${link}${cursors.encode(page.lastId)}>; rel="next"`
      }
      const tag = tags.page(`${status ?? ''}\n${afterId ?? ''}\n${page.ids}`, tagged)
      if (notModified(request, reply, tag, contentCodingFor(request, page.json))) return reply.send()
      if (next !== undefined) reply.header('link', next)
      return reply.type(JSON_CONTENT_TYPE).send(page.json)
    },
  )
}

function createPetRoute(app: FastifyInstance, { pets, linkBase, tokens, idempotencyRecordsPerKey }: PetRoutesOptions): void {
  app.post<{ Body: NewPet; Headers: { 'idempotency-key'?: string } }>(
    '/v1/pets',
    {
      compress: false, // one pet: below the compression threshold
      schema: {
        operationId: 'createPet',
        summary: 'Add an animal',
        description:
          'Adds an animal and returns it with its assigned `id`. `status` defaults to `available`. Unknown fields are rejected. The 201 is sent only after the animal is durably stored. With an `Idempotency-Key`, a retry of the same request returns the first response instead of adding another animal.',
        tags: ['pets'],
        security: WRITE,
        querystring: NO_QUERY,
        headers: IdempotencyHeaders,
        body: { $ref: 'NewPet' },
        response: {
          201: successResponse(201, 'Pet', 'Animal added.', {
            Location: header('Where the new animal can be read: `/v1/pets/{id}`.', {
              maxLength: `${'x'.repeat(LINK_BASE_MAX_LENGTH)}/pets/${INT64_MIN}`.length,
            }),
            'Idempotent-Replayed': header(
              '`true` when this answers again an earlier request with the same `Idempotency-Key` (the pet it added, as stored; no animal was added now); absent otherwise.',
              { enum: ['true'] },
            ),
            [CONSISTENCY_TOKEN_HEADER]: CONSISTENCY_TOKEN_RESPONSE_HEADER,
          }),
          ...errorResponses([400, 401, 403, 408, 409, 413, 415, 422, 429, 431, 500, 503]),
        },
      },
    },
    async (request, reply) => {
      const newPet = request.body
      const draft: PetDraft = { ...newPet, categoryId: toBigInt(newPet.categoryId), status: newPet.status ?? DEFAULT_PET_STATUS }
      const key = request.headers['idempotency-key']
      if (key === undefined) return created(reply, await pets.insertPet(draft))
      const now = Date.now()
      const outcome = await pets.insertPetOnce(draft, {
        scope: (request.apiKey as KeyIdentity).keyId,
        key,
        fingerprint: fingerprintOf(draft),
        now,
        expiredBefore: now - IDEMPOTENCY_KEY_TTL_MS,
        maxRecords: idempotencyRecordsPerKey,
      })
      if (outcome.outcome === 'created') return created(reply, outcome.pet)
      const petId = replayedPetId(outcome)
      // Pets are never deleted: a committed pet that cannot be read back is a fault (500). It is read
      // where the first create's commit is (a replica may not have it yet).
      const position = outcome.outcome === 'replayed' ? outcome.position : undefined
      const body = await pets.findPet(petId, position)
      if (body === undefined) throw new Error(`pet ${petId} of a stored Idempotency-Key not found`)
      return created(reply.header('idempotent-replayed', 'true'), { id: petId, body, position })
    },
  )

  // The 201 of createPet, for a first create and a replay alike: the pet's body, where it lives, and
  // (when reads may come from replicas) the token that makes later reads include it.
  function created(reply: FastifyReply, pet: CreatedPet): FastifyReply {
    if (pet.position !== undefined) reply.header(CONSISTENCY_TOKEN_FIELD, tokens.encode(pet.position))
    return reply.code(201).header('location', `${linkBase}/pets/${pet.id}`).type(JSON_CONTENT_TYPE).send(pet.body)
  }
}

function getPetRoute(app: FastifyInstance, { pets, linkBase, tags, tokens }: PetRoutesOptions): void {
  app.get<{ Params: PetIdParams; Headers: { 'consistency-token'?: string } }>(
    '/v1/pets/:petId',
    {
      config: { headers: deprecationHeaders(`${linkBase}/pets`) },
      compress: false, // one pet: below the compression threshold
      schema: {
        operationId: 'getPet',
        summary: 'Read one animal (deprecated)',
        description: `Deprecated: announced for removal on 5 December 2030 (Sunset: ${SUNSET_DATE}). Use \`GET /pets\` with the \`status\` filter instead. Every response of this operation carries the Deprecation, Sunset and successor-version Link headers.`,
        deprecated: true,
        tags: ['pets'],
        security: READ,
        querystring: NO_QUERY,
        params: PetIdParams,
        headers: READ_HEADERS,
        response: {
          200: successResponse(200, 'Pet', 'Success.', { ...DEPRECATION_HEADERS, ETag: ETAG_HEADER }),
          304: notModifiedResponse(DEPRECATION_HEADERS),
          ...errorResponses([400, 401, 404, 408, 429, 431, 500, 503], DEPRECATION_HEADERS),
        },
      },
    },
    async (request, reply) => {
      const id = toBigInt(request.params.petId)
      const pet = await pets.findPet(id, requestedPosition(tokens, request.headers[CONSISTENCY_TOKEN_FIELD]))
      if (pet === undefined) throw new ApiError('pet_not_found')
      // A pet never changes once created, so its tag stays valid for as long as it exists.
      if (notModified(request, reply, tags.pet(String(id)), undefined)) return reply.send()
      return reply.type(JSON_CONTENT_TYPE).send(pet)
    },
  )
}
