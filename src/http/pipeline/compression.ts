// Response compression (gzip or Brotli, RFC 9110 §8.4) through @fastify/compress, for the bodies
// where it pays: pages of pets, the OpenAPI document, the docs page's assets, the metrics.
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import compress from '@fastify/compress'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/** Bodies smaller than this, in bytes, are sent as they are: compressing them saves little and costs CPU. */
export const COMPRESSION_THRESHOLD_BYTES = 1024

/** The content codings responses may carry (RFC 9110 §8.4.1), in the order the service prefers them. */
export const CONTENT_CODINGS = ['br', 'gzip'] as const

/** A content coding of CONTENT_CODINGS. */
export type ContentCoding = (typeof CONTENT_CODINGS)[number]

/**
 * Compressors for bodies compressed once and then served from memory (the docs page's assets, the
 * OpenAPI document), run on libuv's thread pool so the event loop never waits for them. Done once,
 * the highest levels that stay quick pay off: Brotli 9 (0.5 s once for the 1.7 MB Swagger UI
 * bundle; 11 would take 12 s) and gzip 9.
 */
export const COMPRESS_ONCE: Record<ContentCoding, (body: Buffer) => Promise<Buffer>> = {
  br: (body) =>
    promisify(brotliCompress)(body, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
    }),
  gzip: (body) => promisify(gzip)(body, { level: 9 }),
}

/**
 * Bodies up to this size, in bytes, are compressed in one synchronous call rather than through a
 * zlib stream. The plugin's default follows the core count (8 KiB on 2 cores), which sends a page of
 * 100 pets (6–9 KiB) down the stream path: measured on 2 cores, that cost 4–6 times the CPU of the
 * synchronous call. One synchronous call on 64 KiB holds the
 * event loop about 0.15 ms; pages of 100 pets with long names stay under it.
 */
const SYNC_COMPRESSION_MAX_BYTES = 65_536

/**
 * Registers @fastify/compress (call before the routes: it attaches itself to each route as it is
 * registered). A route whose body is always small opts out with `compress: false` and pays nothing;
 * on the others a request without Accept-Encoding pays the plugin's two synchronous steps, about
 * 1 µs (docs/benchmarks.md). Request bodies are never decompressed: a compressed body would get
 * around the body size limit.
 */
export async function registerCompression(app: FastifyInstance): Promise<void> {
  await app.register(compress, {
    encodings: [...CONTENT_CODINGS],
    threshold: COMPRESSION_THRESHOLD_BYTES,
    syncThreshold: SYNC_COMPRESSION_MAX_BYTES,
    globalDecompression: false,
  })
  // Fastify answers HEAD for a GET route with a route of its own whose onSend handlers end in one
  // that drops the body (`headRouteOnSendHandler`); the plugin adds its own after that one, so it
  // never saw a HEAD's body: no Content-Encoding, no Vary and the identity Content-Length, beside the
  // ETag of the coded representation its GET gets. Dropping the body last, after compression, gives
  // a HEAD the header fields of its GET (RFC 9110 §9.3.2); that handler also gives a 304 without a
  // body `Content-Length: 0`, which the GET's 304 does not carry (§8.6), so it goes again after it.
  // Added after the plugin's hook, so this runs after it for every route.
  app.addHook('onRoute', (route) => {
    if (route.method !== 'HEAD' || route.onSend === undefined) return
    const handlers = [route.onSend].flat()
    const dropBody = handlers.findIndex((handler) => handler.name === 'headRouteOnSendHandler')
    if (dropBody < 0) return
    handlers.push(...handlers.splice(dropBody, 1), noLengthOnNotModified)
    route.onSend = handlers
  })
}

// The last onSend handler of a HEAD route: a 304 carries no Content-Length, as the GET's 304.
function noLengthOnNotModified(
  _request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
  done: (error: null, payload: unknown) => void,
): void {
  if (reply.statusCode === 304) reply.removeHeader('content-length')
  done(null, payload)
}
