// Conditional GETs (RFC 9110 §13): a strong entity tag that names a representation (the OpenAPI
// document's made from its bytes, the pets' from what identifies them), and If-None-Match evaluated against it, so a client that holds the current representation gets 304 and
// no body. Our own code rather than @fastify/etag: that plugin compares If-None-Match as a single tag
// (no lists, no `*`) and tags every response, errors included.
import { createHmac, hash } from 'node:crypto'
import { Negotiator } from '@fastify/accept-negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { INT64_MIN } from '../../int64.js'
import { COMPRESSION_THRESHOLD_BYTES, CONTENT_CODINGS, type ContentCoding } from './compression.js'

/** Characters of an opaque tag's hash: 16 bytes of SHA-256 in base64url. */
const HASH_LENGTH = 22

/** Characters of the scope a pet's tag starts with (48 bits of it: tags of other databases or schemas differ). */
const PET_TAG_SCOPE_LENGTH = 8

/**
 * The longest ETag field value the service sends, in characters: the quoted hash, or a pet's scope
 * and longest id (`-9223372036854775808`), and the longest content-coding suffix (`"…-gzip"`).
 */
export const ETAG_MAX_LENGTH =
  Math.max(HASH_LENGTH, PET_TAG_SCOPE_LENGTH + 1 + String(INT64_MIN).length) +
  2 +
  Math.max(...CONTENT_CODINGS.map((coding) => coding.length + 1))

/** The hash of a representation held as bytes (the OpenAPI document). */
export function representationHash(body: Buffer): string {
  return sha256(body)
}

function sha256(data: string | Buffer): string {
  return hash('sha256', data, 'base64url').slice(0, HASH_LENGTH)
}

/**
 * Entity tags of the pets' representations, made from what identifies one rather than from its
 * bytes: a pet never changes once created (the contract has no update or delete), so its id names
 * its representation, and a page is named by its filter, its cursor and the ids of its pets in order
 * (with the next link, which the tag covers too). The ids themselves, not their count and last id:
 * a replica may make commits visible in another order than its primary. Hashing a page's bytes
 * cost 4 µs of a 20-pet page and 20 µs of a 100-pet one (docs/benchmarks.md); this hashes a few
 * hundred bytes at most.
 */
export interface PetTags {
  /** The tag data of the pet with this id (its decimal digits): the scope and the id itself, no hash. */
  pet(id: string): string
  /** The tag data of a page: `identity` names its filter, cursor and pets' ids; `next`, its next link. */
  page(identity: string, next: string | undefined): string
}

/**
 * PetTags keyed by `secret` (the cursor key, kept by every instance on one database; the restore
 * command replaces it, so ids a restored database hands out again get new tags) and by the Pet
 * schema (`schema`, its JSON): the bytes of a Pet body follow from the schema's members, their order
 * and JSON's own rules (test/api/rendered-json.test.ts), so a release that renders pets differently
 * has another schema and tags them differently.
 */
export function createPetTags(secret: Buffer, schema: string): PetTags {
  const scope = createHmac('sha256', secret).update(`entity tags\n${schema}`).digest('base64url')
  const petScope = `${scope.slice(0, PET_TAG_SCOPE_LENGTH)}_`
  return {
    // A SHA-256 call took 2-3 µs of a getPet; the id is in the URL anyway, and `_` is in no id.
    pet: (id) => petScope + id,
    page: (identity, next) => sha256(`${scope}\npage\n${identity}\n${next ?? ''}`),
  }
}

const negotiator = new Negotiator({ supportedValues: [...CONTENT_CODINGS] })

/**
 * The content coding `body` is sent to `request` in: the choice @fastify/compress makes
 * (compression.ts) — none under the threshold or with `x-no-compression`, else Accept-Encoding
 * negotiated with `*` and `x-gzip` read as gzip (RFC 9110 §12.5.3).
 */
export function contentCodingFor(request: FastifyRequest, body: string | Buffer): ContentCoding | undefined {
  const accepted = request.headers['accept-encoding']
  if (accepted === undefined || request.headers['x-no-compression'] !== undefined) return undefined
  if (Buffer.byteLength(body) < COMPRESSION_THRESHOLD_BYTES) return undefined
  const chosen = negotiator.negotiate(accepted.toLowerCase().replace(/\*|x-gzip/g, 'gzip'))
  return (chosen ?? undefined) as ContentCoding | undefined
}

// The strong entity tag (RFC 9110 §8.8.3) of a representation with data `hash` sent in `coding`: a
// content-coded representation is a different one, so it gets its own tag (`"hash-br"`).
function entityTag(hash: string, coding: ContentCoding | undefined): string {
  return coding === undefined ? `"${hash}"` : `"${hash}-${coding}"`
}

/**
 * Whether If-None-Match `field` matches `tag` (RFC 9110 §13.1.2): `*`, or a list of entity tags one
 * of which equals `tag` by the weak comparison (§8.8.3.2: `W/` ignored). Any other member (empty,
 * malformed) matches nothing; our tags hold no comma, so splitting at commas never cuts one.
 */
function ifNoneMatchMatches(field: string, tag: string): boolean {
  if (field.trim() === '*') return true
  return field.split(',').some((member) => {
    const candidate = member.trim()
    return (candidate.startsWith('W/') ? candidate.slice(2) : candidate) === tag
  })
}

/**
 * Sets the ETag of the representation with data `hash` sent in `coding` (see contentCodingFor) on
 * `reply`; when the request's If-None-Match matches it, also sets 304 and returns true: the caller
 * then sends no body (RFC 9110 §15.4.5: the 304 carries the ETag, the Cache-Control and, for a coded
 * representation, the Vary the 200 would have). Call only once the request is authenticated and the
 * representation is known to exist.
 */
export function notModified(
  request: FastifyRequest,
  reply: FastifyReply,
  hash: string,
  coding: ContentCoding | undefined,
): boolean {
  const tag = entityTag(hash, coding)
  reply.header('etag', tag)
  const field = request.headers['if-none-match']
  if (field === undefined || !ifNoneMatchMatches(field, tag)) return false
  // Added to what is there (CORS's `Origin`), unless named already, as @fastify/compress adds it to the 200.
  const vary = String(reply.getHeader('vary') ?? '')
  if (coding !== undefined && !/accept-encoding/i.test(vary)) {
    reply.header('vary', vary === '' ? 'accept-encoding' : `${vary}, accept-encoding`)
  }
  reply.code(304)
  return true
}
