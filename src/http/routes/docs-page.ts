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
//
// int64 (docs/specification.md): JSON.parse rounds integers beyond 2^53, and Swagger UI parses the
// document and each answer with it, so, left alone, it fills the request body with digits the
// service refuses (2^63-1) or stores changed (2^53+1), and shows examples and answers rounded. The
// page reads the document's text a second time with the source text of each number (JSON.parse's
// third reviver argument, where the browser has JSON.rawJSON): each example whose text JSON.parse
// changes is known by its rounded text, and that text is replaced by the exact one wherever Swagger
// UI puts it (the request body it fills in, the code it shows). Answers are shown from their text.
// Swagger UI itself keeps plain numbers: its resolver and its schema views cannot take BigInts.
// Headers a response shares with many others are $refs to components/headers in the document; the
// page lists those by name in one line and keeps the table for the headers of that response alone.
// Error responses show their Error body on demand (ErrorBodiesOnDemand).
const INITIALIZER = `'use strict'
var EXACT = typeof JSON.rawJSON === 'function'
function parseExact(text) {
  return JSON.parse(text, function (key, value, context) {
    var exact = EXACT && typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\\d+$/.test(context.source)
    return exact ? JSON.rawJSON(context.source) : value
  })
}
// The exact text of each example JSON.parse changes, by the rounded text Swagger UI makes of it.
function exactExamples(rounded, exact, found) {
  for (var key in rounded) {
    var value = rounded[key]
    if (!value || typeof value !== 'object') continue
    if (key === 'value' || key === 'example') {
      var text = JSON.stringify(value, null, 2)
      var exactText = JSON.stringify(exact[key], null, 2)
      if (text !== exactText) found[text] = exactText
    }
    exactExamples(value, exact[key], found)
  }
  return found
}
window.addEventListener('load', function () {
  fetch('v1/openapi.json').then(function (response) { return response.text() }).then(function (text) {
    var spec = JSON.parse(text)
    var exact = EXACT ? exactExamples(spec, parseExact(text), {}) : {}
    listSharedHeaders(spec)
    spec.servers.sort(function (a, b) { return Number(!a.url.startsWith('/')) - Number(!b.url.startsWith('/')) })
    start(spec, exact)
  })
})
function listSharedHeaders(spec) {
  var headers = (spec.components && spec.components.headers) || {}
  var lines = Object.keys(headers).map(function (name) { return '- \`' + name + '\`: ' + headers[name].description })
  if (lines.length) spec.info.description += '\\n\\n**Headers on many responses.** Each response below names those it carries.\\n\\n' + lines.join('\\n')
}
function ExactInt64(exact) {
  return function (system) {
    var h = system.React.createElement
    return {
      statePlugins: {
        oas3: {
          wrapActions: {
            setRequestBodyValue: function (original) {
              return function (request) {
                var value = typeof request.value === 'string' && exact[request.value]
                return original(value ? Object.assign({}, request, { value: value }) : request)
              }
            },
          },
        },
      },
      wrapComponents: {
        HighlightCode: function (Original) {
          return function (props) {
            var text = typeof props.children === 'string' && exact[props.children]
            return h(Original, text ? Object.assign({}, props, { children: text }) : props)
          }
        },
        responseBody: function (Original) {
          return function (props) {
            if (!EXACT || typeof props.content !== 'string' || !/json/i.test(props.contentType || '')) return h(Original, props)
            var body
            try { body = JSON.stringify(parseExact(props.content), null, '  ') } catch (error) { return h(Original, props) }
            var HighlightCode = props.getComponent('HighlightCode', true)
            return h('div', null, h('h5', null, 'Response body'),
              h(HighlightCode, { language: 'json', downloadable: true, fileName: 'response.json', canCopy: true }, body))
          }
        },
      },
    }
  }
}
function SharedHeadersOnce(system) {
  var h = system.React.createElement
  var isShared = function (header) { return header && header.get && /#\\/components\\/headers\\//.test(header.get('$$ref') || '') }
  return {
    wrapComponents: {
      headers: function (Original) {
        return function (props) {
          if (!props.headers || !props.headers.filter) return h(Original, props)
          var own = props.headers.filter(function (header) { return !isShared(header) })
          var names = props.headers.filter(isShared).keySeq().toArray()
          var Markdown = props.getComponent('Markdown', true)
          // An error response (props.compact) lists its own headers one a line, not as a table.
          var ownLines = own.entrySeq().toArray().map(function (entry) {
            return h('p', { className: 'headers-own', key: entry[0] }, h('code', null, entry[0]), ' ',
              h(Markdown, { source: entry[1].get('description') || '' }))
          })
          return h('div', null,
            names.length ? h('p', { className: 'headers-shared' }, 'Headers: ' + names.join(', ')) : null,
            own.size ? (props.compact ? ownLines : h(Original, Object.assign({}, props, { headers: own }))) : null)
        }
      },
    },
  }
}
// An error response shows its status and when it is sent on one line, then its headers, in a few
// lines (PAGE_STYLE); its Error body (the same shape everywhere, one example per code) opens on
// demand, so an opened operation fits a screen or two.
function ErrorBodiesOnDemand(system) {
  var h = system.React.createElement
  return {
    wrapComponents: {
      response: function (Original) {
        return function (props) {
          var opened = system.React.useState(false)
          if (Number(props.code) < 400 || opened[0]) return h(Original, props)
          var Markdown = props.getComponent('Markdown', true)
          var Headers = props.getComponent('headers')
          return h('tr', { className: 'response ' + (props.className || ''), 'data-code': props.code },
            h('td', { className: 'response-col_status' }, props.code),
            h('td', { className: 'response-col_description' },
              h('div', { className: 'response-col_description__inner error-line' },
                h(Markdown, { source: props.response.get('description') }),
                h('button', { type: 'button', className: 'btn error-body-show', onClick: function () { opened[1](true) } }, 'Show the Error body')),
              props.response.get('headers')
                ? h(Headers, { headers: props.response.get('headers'), getComponent: props.getComponent, compact: true })
                : null),
            h('td', { className: 'response-col_links' }))
        }
      },
    },
  }
}
function start(spec, exact) {
  window.ui = SwaggerUIBundle({
    spec: spec,
    dom_id: '#swagger-ui',
    validatorUrl: null,
    deepLinking: true,
    tryItOutEnabled: true,
    displayRequestDuration: true,
    persistAuthorization: false,
    presets: [SwaggerUIBundle.presets.apis],
    plugins: [ExactInt64(exact), SharedHeadersOnce, ErrorBodiesOnDemand],
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

// Swagger UI's layout made denser where our plugins render (INITIALIZER): an error response's
// description and button share a line, header lines are small, and the request body's editor is
// as tall as the examples rather than 280 px.
const PAGE_STYLE = [
  '.swagger-ui .error-line{display:flex;gap:1em;align-items:baseline}',
  '.swagger-ui .error-line .btn{padding:2px 10px;font-size:12px;white-space:nowrap}',
  '.swagger-ui .headers-shared,.swagger-ui .headers-own{margin:4px 0 0;font-size:12px}',
  '.swagger-ui .headers-own code{font-weight:600;margin-right:.5em}',
  '.swagger-ui .headers-own div,.swagger-ui .headers-own p{display:inline;margin:0}',
  '.swagger-ui table tbody tr.response td{padding-top:6px}',
  '.swagger-ui .body-param textarea{min-height:96px}',
].join('')

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
    <style>${PAGE_STYLE}</style>
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
 * Registers GET /docs, GET /docs/ (a 308 redirect to /docs) and GET /docs/<asset> for each
 * allow-listed asset: public (no API key), hidden from the OpenAPI document. The page and assets are read once, at registration, and text
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
  // `/docs/` is the page mistyped: a permanent redirect (RFC 9110 §15.4.9) to `../docs`, relative,
  // so a proxy's path prefix is kept, as the page's own links keep it. Public, like the page.
  app.get(`${DOCS_PATH}/`, options, async (_request, reply) => reply.redirect(`..${DOCS_PATH}`, 308))
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
