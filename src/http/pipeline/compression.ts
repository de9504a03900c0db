// Response compression (gzip or Brotli, RFC 9110 §8.4) through @fastify/compress, for the bodies
// where it pays: pages of pets, the OpenAPI document, the docs page's assets, the metrics.
import compress from '@fastify/compress'
import type { FastifyInstance } from 'fastify'

/** Bodies smaller than this, in bytes, are sent as they are: compressing them saves little and costs CPU. */
export const COMPRESSION_THRESHOLD_BYTES = 1024

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
    encodings: ['br', 'gzip'],
    threshold: COMPRESSION_THRESHOLD_BYTES,
    syncThreshold: SYNC_COMPRESSION_MAX_BYTES,
    globalDecompression: false,
  })
}
