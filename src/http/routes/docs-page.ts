// GET /docs: the interactive API reference (Swagger UI over /v1/openapi.json), served with all of
// its assets by the service itself, without an API key, so it works offline and behind firewalls.
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Negotiator } from '@fastify/accept-negotiator'
import type { FastifyInstance } from 'fastify'
import { COMPRESS_ONCE, COMPRESSION_THRESHOLD_BYTES } from '../pipeline/compression.js'

/** Where the page is served. */
const DOCS_PATH = '/docs'

// Swagger UI rather than Scalar: its bundle needs no fonts and calls no outside service once the
// validator badge is off (validatorUrl: null), strikes deprecated operations through, and offers
// "Authorize" (a bearer key) and "Try it out" out of the box. The standalone preset (a top bar to
// load other documents) is left out on purpose: this page documents this service only. The key
// entered stays in the page's memory (persistAuthorization: false keeps it out of localStorage). The
// document's URL is relative to /docs, like the asset links, so a proxy's path prefix is kept. The
// page is served by the API itself, so "Try it out" uses the relative server (`/v1`), listed second
// after the HOST:PORT one that only works from the server's own machine.
const INITIALIZER = `'use strict'
window.addEventListener('load', function () {
  fetch('v1/openapi.json').then(function (response) { return response.json() }).then(function (spec) {
    spec.servers.sort(function (a, b) { return Number(!a.url.startsWith('/')) - Number(!b.url.startsWith('/')) })
    start(spec)
  })
})
function start(spec) {
  window.ui = SwaggerUIBundle({
    spec: spec,
    dom_id: '#swagger-ui',
    validatorUrl: null,
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
  })
}
`

/** An asset of the page: its body, content type and a short content hash that busts caches. */
interface Asset {
  body: Buffer
  type: string
  hash: string
}

function asset(body: Buffer, type: string): Asset {
  return { body, type, hash: createHash('sha256').update(body).digest('base64url').slice(0, 12) }
}

/** The encodings an asset is stored in besides its own bytes, in order of preference. */
type Encoding = 'br' | 'gzip'
const ENCODINGS: Encoding[] = ['br', 'gzip']

// Each text asset is compressed once per encoding, at its first request (COMPRESS_ONCE), and kept:
// compressing the 1.7 MB Swagger UI bundle on every request cost 73 ms (gzip) to 92 ms (Brotli) of
// CPU per load, for anyone, without a key.

/**
 * The body of `asset` in the encoding the request's Accept-Encoding prefers (RFC 9110 §12.5.3), and
 * that encoding (undefined: as it is). Images and bodies under the compression threshold are always
 * sent as they are. The compressed forms are made on first use and then served from memory.
 */
function encodedAssets(): (asset: Asset, acceptEncoding: string | undefined) => Promise<[Buffer, Encoding | undefined]> {
  // No cache of verdicts: one keyed by the Accept-Encoding text would grow with every distinct value
  // a client sends (15 KB each). Negotiating anew costs microseconds, against a compressed body served from memory.
  const negotiator = new Negotiator({ supportedValues: ENCODINGS })
  const stored = new Map<string, Promise<Buffer>>() // by `${content hash} ${encoding}`
  return async (asset, acceptEncoding) => {
    const encoding = compressible(asset) ? (negotiator.negotiate(acceptEncoding ?? '') as Encoding | null) : null
    if (!encoding) return [asset.body, undefined]
    const id = `${asset.hash} ${encoding}`
    const body = stored.get(id) ?? COMPRESS_ONCE[encoding](asset.body)
    stored.set(id, body)
    return [await body, encoding]
  }
}

function compressible(asset: Asset): boolean {
  return asset.type.startsWith('text/') && asset.body.length >= COMPRESSION_THRESHOLD_BYTES
}

/**
 * Reads the fixed allow-list of files the page needs (never a path taken from a request): the
 * Swagger UI bundle, its stylesheet and icon from the swagger-ui-dist package, and the initializer.
 */
async function loadAssets(): Promise<Map<string, Asset>> {
  const dist = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
  const fromDist = async (file: string, type: string): Promise<[string, Asset]> => [
    file,
    asset(await readFile(join(dist, file)), type),
  ]
  return new Map([
    await fromDist('swagger-ui-bundle.js', 'text/javascript; charset=utf-8'),
    await fromDist('swagger-ui.css', 'text/css; charset=utf-8'),
    await fromDist('favicon-32x32.png', 'image/png'),
    ['docs-page.js', asset(Buffer.from(INITIALIZER), 'text/javascript; charset=utf-8')],
  ])
}

// Only this origin: scripts and styles from the files above (Swagger UI also sets style
// attributes, hence 'unsafe-inline' for styles only), images from the stylesheet's data: icons,
// requests to the service itself (the document and "Try it out").
const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** The page links its assets relative to itself, so it also works under a path prefix of a proxy. */
function page(assets: Map<string, Asset>): string {
  const href = (file: string) => `docs/${file}?v=${assets.get(file)?.hash}`
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Animal Store API reference</title>
    <link rel="stylesheet" href="${href('swagger-ui.css')}">
    <link rel="icon" type="image/png" href="${href('favicon-32x32.png')}">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="${href('swagger-ui-bundle.js')}"></script>
    <script src="${href('docs-page.js')}"></script>
  </body>
</html>
`
}

/**
 * Registers GET /docs and GET /docs/<asset> for each allow-listed asset: public (no API key),
 * hidden from the OpenAPI document. The page and assets are read once, at registration, and text
 * assets compressed once per encoding (encodedAssets), never per request. Assets are cached a year
 * (`immutable`: the page links them with a content hash); the page is revalidated.
 */
export default async function docsPage(app: FastifyInstance): Promise<void> {
  const assets = await loadAssets()
  const html = page(assets)
  const encoded = encodedAssets()
  // compress: false: the page is under the threshold, and the assets carry their own stored encodings.
  const options = { config: { public: true }, schema: { hide: true }, compress: false as const }
  app.get(DOCS_PATH, options, async (_request, reply) =>
    reply
      .header('content-type', 'text/html; charset=utf-8')
      .header('content-security-policy', CONTENT_SECURITY_POLICY)
      .header('x-content-type-options', 'nosniff')
      .header('cache-control', 'no-cache')
      .send(html),
  )
  for (const [file, asset] of assets) {
    app.get(`${DOCS_PATH}/${file}`, options, async (request, reply) => {
      const [body, encoding] = await encoded(asset, request.headers['accept-encoding'])
      if (compressible(asset)) reply.header('vary', 'accept-encoding')
      if (encoding) reply.header('content-encoding', encoding)
      return reply
        .header('content-type', asset.type)
        .header('x-content-type-options', 'nosniff')
        .header('cache-control', 'public, max-age=31536000, immutable')
        .send(body)
    })
  }
}
