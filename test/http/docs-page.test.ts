// GET /docs, the offline API reference: its HTTP answers (public, headers, a fixed allow-list of
// assets that opens no other path), and the page itself in a real browser (Debian's chromium driven
// by playwright-core). It runs on SQLite only: the page reads the database through listPets alone,
// which every other suite covers on both databases.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import type { Request } from 'playwright-core'
import { launchChromium } from '../../scripts/lib/chromium.js'
import { openapi } from '../../scripts/lib/contract.js'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { SUNSET_DATE } from '../../src/http/routes/deprecation.js'

// A full collection on demand, so that heap figures count what is kept, not garbage not yet collected.
setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** Where the browser test leaves its screenshot (the repository's ignored .tmp/ folder). */
const SCREENSHOT = fileURLToPath(new URL('../../.tmp/docs-page.png', import.meta.url))

/** GETs `path` with Accept-Encoding `encoding` over node:http, which leaves the body as sent. */
function getRaw(origin: string, path: string, encoding: string): Promise<{ headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(`${origin}${path}`, { headers: { 'accept-encoding': encoding } }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (chunk: Buffer) => chunks.push(chunk))
      response.on('end', () => resolve({ headers: response.headers, body: Buffer.concat(chunks) }))
      response.on('error', reject)
    })
    request.on('error', reject)
    request.end()
  })
}

const BUNDLE = readFileSync(
  join(dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json')), 'swagger-ui-bundle.js'),
)
const LOADS = 40

/** Sends LOADS sequential GETs of `url` from a child process; the body sizes it received, as sent. */
async function loadsFromAnotherProcess(url: string, encoding: string): Promise<number[]> {
  const script = `
    const { request } = await import('node:http')
    const sizes = []
    for (let i = 0; i < ${LOADS}; i++) {
      sizes.push(await new Promise((resolve, reject) => {
        request(${JSON.stringify(url)}, { headers: { 'accept-encoding': ${JSON.stringify(encoding)} } }, (response) => {
          let size = 0
          response.on('data', (chunk) => { size += chunk.length })
          response.on('end', () => resolve(size))
        }).on('error', reject).end()
      }))
    }
    process.stdout.write(JSON.stringify(sizes))`
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script])
  return JSON.parse(stdout)
}

/** The page's assets, as linked from it (each with its `?v=` content hash). */
function assetLinks(html: string): string[] {
  return [...html.matchAll(/(?:href|src)="(docs\/[^"]+)"/g)].map((match) => `/${match[1]}`)
}

describe('GET /docs (the API reference page)', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  it('returns the page without a key, as HTML with a same-origin Content-Security-Policy', async () => {
    const response = await fetch(`${server.origin}/docs`)
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8')
    assert.equal(response.headers.get('x-content-type-options'), 'nosniff')
    assert.equal(response.headers.get('cache-control'), 'no-cache')
    const csp = response.headers.get('content-security-policy') ?? ''
    assert.match(csp, /default-src 'none'/)
    assert.match(csp, /script-src 'self'(;|$)/, 'no inline or outside scripts')
    assert.match(csp, /connect-src 'self'(;|$)/, 'requests only to the service')
    const html = await response.text()
    const links = [...html.matchAll(/(?:href|src)="([^"]*)"/g)].map((match) => match[1])
    assert.ok(links.length > 0 && links.every((link) => link?.startsWith('docs/')), `only its own assets: ${links}`)
    assert.doesNotMatch(html, /<script>/, 'no inline script')
  })

  it('serves each linked asset without a key, with its content type, nosniff and a long cache', async () => {
    const html = await (await fetch(`${server.origin}/docs`)).text()
    const links = assetLinks(html)
    assert.deepEqual(links.map((link) => link.split('?')[0]).sort(), [
      '/docs/docs-page.js',
      '/docs/favicon-32x32.png',
      '/docs/swagger-ui-bundle.js',
      '/docs/swagger-ui.css',
    ])
    const types = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', png: 'image/png' }
    for (const link of links) {
      const response = await fetch(server.origin + link)
      assert.equal(response.status, 200, link)
      const extension = link.split('?')[0]?.split('.').pop() as keyof typeof types
      assert.equal(response.headers.get('content-type'), types[extension], link)
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', link)
      assert.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable', link)
      assert.ok((await response.arrayBuffer()).byteLength > 0, link)
    }
  })

  it('compresses the Swagger UI bundle once: br and gzip as asked, the same bytes, 40 loads at a few ms of server CPU at most', async (t) => {
    const html = await (await fetch(`${server.origin}/docs`)).text()
    const bundle = assetLinks(html).find((link) => link.includes('swagger-ui-bundle.js')) as string
    for (const [encoding, decode] of [
      ['br', brotliDecompressSync],
      ['gzip, deflate', gunzipSync],
      ['identity', (body: Buffer) => body],
    ] as const) {
      const first = await getRaw(server.origin, bundle, encoding) // the one load that may compress
      const expected = encoding === 'identity' ? undefined : encoding.split(',')[0]
      assert.equal(first.headers['content-encoding'], expected)
      assert.equal(first.headers.vary, 'accept-encoding')
      assert.equal(first.headers['cache-control'], 'public, max-age=31536000, immutable')
      assert.ok(decode(first.body).equals(BUNDLE), `${encoding}: the bundle's own bytes`)
      if (expected) assert.ok(first.body.length < BUNDLE.length / 3, `${encoding}: ${first.body.length} bytes`)
      // The loads come from another process, so this process's CPU meanwhile is the server's.
      const started = process.cpuUsage()
      const sizes = await loadsFromAnotherProcess(`${server.origin}${bundle}`, encoding)
      const { user, system } = process.cpuUsage(started)
      const perLoadMs = (user + system) / 1000 / LOADS
      assert.deepEqual(new Set(sizes), new Set([first.body.length]))
      t.diagnostic(`${encoding}: ${perLoadMs.toFixed(2)} ms of server CPU per load, ${first.body.length} bytes`)
      // Measured 0.8–1.2 ms on a quiet machine; compressing per request cost 35–90 ms a load. The
      // bound leaves room for a busy one (CPU time grows with contention) and still fails on that.
      assert.ok(perLoadMs < 10, `${encoding}: ${perLoadMs.toFixed(2)} ms of CPU per load`)
    }
  })

  it('keeps no memory per distinct Accept-Encoding: 3,000 HEADs with 15 KB values grow the heap by under 10 MB', async () => {
    const html = await (await fetch(`${server.origin}/docs`)).text()
    const bundle = assetLinks(html).find((link) => link.includes('swagger-ui-bundle.js')) as string
    const collect = () => {
      gc()
      return process.memoryUsage().heapUsed
    }
    const before = collect()
    // From another process, so that only the server's side of the requests is in this heap.
    const script = `
      const { request, Agent } = await import('node:http')
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      for (let i = 0; i < 3000; i++) {
        const encoding = 'br;q=0.5, ' + String(i).padStart(6, '0') + 'x'.repeat(15_000)
        const status = await new Promise((resolve, reject) => {
          request(${JSON.stringify(`${server.origin}${bundle}`)}, { method: 'HEAD', agent, headers: { 'accept-encoding': encoding } }, (response) => {
            response.resume().on('end', () => resolve(response.statusCode))
          }).on('error', reject).end()
        })
        if (status !== 200) throw new Error('HEAD answered ' + status)
      }
      agent.destroy()`
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { timeout: 60_000 })
    const grownMiB = (collect() - before) / 1024 / 1024
    assert.ok(grownMiB < 10, `the heap grew ${grownMiB.toFixed(1)} MiB`)
  })

  it('opens no other path: other files, traversal and unknown paths under /docs (but /docs/) still need a key (401)', async () => {
    const paths = [
      '/docs/index.html',
      '/docs/swagger-ui.js', // in the package, not on the allow-list
      '/docs/swagger-ui-bundle.js.map',
      '/docs/../v1/pets',
      '/docs/%2e%2e/v1/pets',
      '/docs/..%2fpackage.json',
      '/docsx',
      '/v1/docs',
    ]
    for (const path of paths) {
      const response = await call(server, 'GET', path, { key: null })
      assert.equal(response.status, 401, path)
      assert.equal(response.json.code, 'missing_api_key', path)
    }
    // With a key, a file off the allow-list is simply not found.
    assert.equal((await call(server, 'GET', '/docs/swagger-ui.js')).status, 404)
    assert.equal((await call(server, 'GET', '/v1/pets', { key: null })).status, 401)
  })

  it('redirects /docs/ to /docs (308, relative, so a path prefix is kept) without a key', async () => {
    for (const method of ['GET', 'HEAD']) {
      const response = await fetch(`${server.origin}/docs/`, { method, redirect: 'manual' })
      assert.equal(response.status, 308, method)
      assert.equal(response.headers.get('location'), '../docs', method)
    }
    const followed = await fetch(`${server.origin}/docs/`)
    assert.equal(followed.url, `${server.origin}/docs`)
    assert.equal(followed.status, 200)
    assert.match(await followed.text(), /<title>Animal Store API reference<\/title>/)
  })

  it('leaves the OpenAPI document unchanged (the page is not an operation of the interface)', async () => {
    const response = await call(server, 'GET', '/v1/openapi.json', { key: null })
    assert.deepEqual(response.json, { ...openapi, servers: openapi.servers.slice(1) }) // built without HOST:PORT
    assert.ok(!Object.keys(openapi.paths).some((path) => path.includes('docs')))
  })

  it('in a browser: shows the three operations, getPet deprecated with its sunset, and lists pets with a key entered on the page', async (t) => {
    const name = `Docs-page dog ${Date.now()}`
    assert.equal((await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })).status, 201)

    const started = performance.now()
    const browser = await launchChromium()
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } })
      const requests: Request[] = []
      const problems: string[] = []
      page.on('request', (request) => requests.push(request))
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text())
      })
      page.on('pageerror', (error) => problems.push(error.message))

      await page.goto(`${server.origin}/docs`)
      const operations = page.locator('.opblock')
      await operations.first().waitFor()
      for (const id of ['listPets', 'createPet', 'getPet']) {
        assert.equal(await page.locator(`#operations-pets-${id}`).count(), 1, `${id} is listed`)
      }
      assert.equal(await operations.count(), 3, 'exactly the three operations')

      // getPet: marked deprecated, its path struck through, and its sunset date stated.
      const getPet = page.locator('#operations-pets-getPet')
      assert.match((await getPet.getAttribute('class')) ?? '', /\bopblock-deprecated\b/)
      const path = getPet.locator('.opblock-summary-path__deprecated')
      // (through globalThis: this project type-checks for Node.js, without the DOM's names)
      const decoration: string = await path.evaluate(
        (element) => (globalThis as any).getComputedStyle(element).textDecorationLine,
      )
      assert.match(decoration, /line-through/)
      await getPet.locator('.opblock-summary-control').click()
      await getPet.getByText('Warning: Deprecated').waitFor()
      await getPet.getByText(SUNSET_DATE).first().waitFor()
      await getPet.locator('.opblock-summary-control').click() // folded again, for the screenshot

      // The key, entered in the "Authorize" dialog.
      await page.locator('button.authorize').first().click()
      await page.locator('.auth-container input').fill(server.key)
      await page.locator('.auth-btn-wrapper button.authorize').click()
      await page.locator('.auth-btn-wrapper button.btn-done').click()

      // A real listPets request from the page, and its 200 answer with the pet shown.
      const listPets = page.locator('#operations-pets-listPets')
      await listPets.locator('.opblock-summary-control').click()
      const sent = page.waitForRequest((request) => request.url().startsWith(`${server.origin}/v1/pets`))
      await listPets.locator('button.execute').click()
      assert.equal((await sent).headers().authorization, `Bearer ${server.key}`, 'the key entered is sent')
      const answer = listPets.locator('.live-responses-table .response')
      await answer.locator('.response-col_status', { hasText: '200' }).waitFor()
      await answer.getByText(name).first().waitFor()

      mkdirSync(dirname(SCREENSHOT), { recursive: true })
      // The page from its top to the end of the live answer (the documented responses follow).
      const box = await answer.boundingBox()
      assert.ok(box, 'the answer is on the page')
      await page.screenshot({
        path: SCREENSHOT,
        fullPage: true,
        clip: { x: 0, y: 0, width: 1280, height: box.y + box.height + 24 },
      })
      t.diagnostic(`screenshot: ${SCREENSHOT}`)

      const urls = requests.map((request) => request.url())
      const offOrigin = urls.filter((url) => !url.startsWith('data:') && new URL(url).origin !== server.origin)
      assert.deepEqual(offOrigin, [], 'no request leaves the origin')
      assert.ok(urls.includes(`${server.origin}/v1/openapi.json`), 'the page reads the served document')
      assert.deepEqual(problems, [], 'no script error or Content-Security-Policy violation')
      const stored = await page.evaluate(() => JSON.stringify({ ...(globalThis as any).localStorage }))
      assert.ok(!stored.includes(server.key), 'the key is not kept in the browser')
    } finally {
      await browser.close()
    }
    t.diagnostic(`browser test: ${Math.round(performance.now() - started)} ms`)
  })
})
