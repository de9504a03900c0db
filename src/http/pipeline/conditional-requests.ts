// Conditional GETs (RFC 9110 §13): a strong entity tag made from the bytes of a representation, and
// If-None-Match evaluated against it, so a client that holds the current representation gets 304 and
// no body. Our own code rather than @fastify/etag: that plugin compares If-None-Match as a single tag
// (no lists, no `*`) and tags every response, errors included.
import { hash } from 'node:crypto'
import { Negotiator } from '@fastify/accept-negotiator'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { COMPRESSION_THRESHOLD_BYTES, CONTENT_CODINGS, type ContentCoding } from './compression.js'

/** Characters of an opaque tag's hash: 16 bytes of SHA-256 in base64url. */
const HASH_LENGTH = 22

/**
 * The longest ETag field value the service sends, in characters: the quoted hash and the longest
 * content-coding suffix (`"…-gzip"`).
 */
export const ETAG_MAX_LENGTH = HASH_LENGTH + 2 + Math.max(...CONTENT_CODINGS.map((coding) => coding.length + 1))

/**
 * Characters of representation data whose hashes are remembered, at most (1 MiB even when every
 * character takes two bytes); dropped together when full. The same pages and pets are asked for
 * again and again (a client polling with If-None-Match is why tags exist), and finding their text in
 * a Map costs a fraction of hashing it: SHA-256 of a page of 20 pets took 6-8 µs of a list's CPU in
 * the running service (docs/benchmarks.md).
 */
export const HASH_CACHE_CHARACTERS = 512 * 1024

// Keyed by the body, with the header the hash was made with (a page's body comes flat from the
// database; a key joined with the header would be copied again on every lookup). The key is the
// data itself, never a request's text: the cache cannot give a wrong hash, and what a client can
// add to it is bounded by HASH_CACHE_CHARACTERS.
const hashes = new Map<string, { header: string | undefined; hash: string }>()
let cachedCharacters = 0

/**
 * The hash of a representation's data: its `body`, and `header`, a header such as a page's `Link`
 * that a cached copy must also get right. The header goes first with its length, so that no two
 * pairs give the same input (nor a body alone: JSON never starts with digits and a colon). Text is
 * looked up in a bounded cache first (HASH_CACHE_CHARACTERS).
 */
export function representationHash(body: Buffer): string
export function representationHash(body: string, header?: string): string
export function representationHash(body: string | Buffer, header?: string): string {
  if (typeof body !== 'string') return sha256(body) // bytes: no header (the overloads say so)
  const known = hashes.get(body)
  if (known !== undefined && known.header === header) return known.hash
  const computed = sha256(header === undefined ? body : `${header.length}:${header}${body}`)
  const characters = body.length + (header?.length ?? 0)
  if (cachedCharacters + characters > HASH_CACHE_CHARACTERS) {
    hashes.clear()
    cachedCharacters = 0
  }
  if (characters <= HASH_CACHE_CHARACTERS) {
    // A body seen before with another header is replaced: its characters are counted twice until
    // the next drop, which only makes that come sooner.
    hashes.set(body, { header, hash: computed })
    cachedCharacters += characters
  }
  return computed
}

function sha256(data: string | Buffer): string {
  return hash('sha256', data, 'base64url').slice(0, HASH_LENGTH)
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
  if (coding !== undefined) reply.header('vary', 'accept-encoding')
  reply.code(304)
  return true
}
