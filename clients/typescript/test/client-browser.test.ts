// The TypeScript client in a browser: esbuild bundles it as a page would, Debian's Chromium loads the
// page from its own origin, and the page creates, pages and handles errors against a live service
// with CORS on for that origin, with the browser's own fetch (nothing passed in).
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'
import type { Browser } from 'playwright-core'
import { launchChromium } from '../../../scripts/lib/chromium.js'
import { startServer, type TestServer } from '../../../scripts/lib/test-server.js'

// The page's script: what a web app would write. `exercise` returns plain strings (bigints shown).
const PAGE_SCRIPT = `
import { AnimalStoreError, createClient } from './index.ts'

async function failure(action) {
  try {
    await action()
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

window.exercise = async (baseUrl, apiKey) => {
  const store = createClient({ baseUrl, apiKey })
  const created = []
  for (const [name, categoryId] of [['Rex 🐶', 9007199254740993n], ['Tom', 2n], ['Kit', -9223372036854775808n]]) {
    const pet = await store.createPet({ name, categoryId })
    created.push(pet.id + ':' + pet.categoryId)
  }
  const { response, requestId } = await store.createPet({ name: 'Zoë', categoryId: 4n }).withResponse()
  const pages = []
  for await (const page of store.pages({ limit: 3 })) pages.push(page.pets.map((pet) => pet.id + ':' + pet.name))
  const invalid = await failure(() => store.listPets({ limit: 101 }))
  const stranger = await failure(() => createClient({ baseUrl, apiKey: 'ask_wrong' }).listPets())
  return {
    created,
    location: response.headers.get('location'),
    rateLimit: response.headers.get('ratelimit'),
    requestId,
    pages,
    invalid: [invalid instanceof AnimalStoreError, invalid.status, invalid.code, invalid.details.map((d) => d.field), invalid.requestId],
    stranger: [stranger instanceof AnimalStoreError, stranger.code, stranger.headers.get('www-authenticate')],
  }
}
`

/** What the page's `exercise` returns. */
interface PageResult {
  created: string[]
  location: string
  rateLimit: string
  requestId: string
  pages: string[][]
  invalid: unknown[]
  stranger: unknown[]
}

const HTML = '<!doctype html><meta charset="utf-8"><title>client</title><script type="module" src="/page.js"></script>'

/** Serves the page and its bundle from an origin of its own (the browser app), on 127.0.0.1. */
async function pageServer(bundle: string): Promise<{ origin: string; server: Server }> {
  const server = createServer((request, response) => {
    const [type, body] = request.url === '/page.js' ? ['text/javascript', bundle] : ['text/html', HTML]
    response.writeHead(200, { 'content-type': `${type}; charset=utf-8` }).end(body)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

describe('TypeScript client in a browser (Chromium, bundled by esbuild, CORS on)', () => {
  let api: TestServer
  let page: Awaited<ReturnType<typeof pageServer>>
  let browser: Browser
  before(async () => {
    const bundled = await build({
      stdin: { contents: PAGE_SCRIPT, resolveDir: fileURLToPath(new URL('../src/', import.meta.url)) },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
    })
    page = await pageServer(bundled.outputFiles[0]?.text ?? '')
    api = await startServer({ corsOrigins: [page.origin] })
    browser = await launchChromium()
  })
  after(async () => {
    await browser?.close()
    page?.server.close()
    await api?.close()
  })

  it('creates (exact int64), pages through Link, reads success headers and handles typed errors', async () => {
    const started = performance.now()
    const tab = await browser.newPage()
    const problems: string[] = []
    tab.on('pageerror', (error) => problems.push(error.message))
    tab.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    await tab.goto(page.origin)
    await tab.waitForFunction(() => 'exercise' in globalThis)
    const result = (await tab.evaluate(
      ([baseUrl, key]) => (globalThis as unknown as { exercise(b: string, k: string): Promise<unknown> }).exercise(baseUrl, key),
      [`${api.origin}/v1`, api.key] as const,
    )) as PageResult
    await tab.close()
    // Chromium logs the 400 and the 401 as failed resource loads: expected, and the only ones.
    assert.deepEqual(
      problems.filter((problem) => !/status of (400|401) /.test(problem)),
      [],
    )
    assert.deepEqual(result.created, ['1:9007199254740993', '2:2', '3:-9223372036854775808'])
    assert.equal(result.location, '/v1/pets/4')
    assert.match(result.rateLimit, /^default;r=\d+;t=\d+$/, 'RateLimit is readable across origins')
    assert.match(result.requestId, /^[0-9a-f-]{36}$/)
    assert.deepEqual(result.pages, [['1:Rex 🐶', '2:Tom', '3:Kit'], ['4:Zoë']])
    const [isError, status, code, fields, requestId] = result.invalid
    assert.deepEqual([isError, status, code, fields], [true, 400, 'invalid_request', ['limit']])
    assert.match(String(requestId), /^[0-9a-f-]{36}$/)
    const [strangerIsError, strangerCode, challenge] = result.stranger
    assert.deepEqual([strangerIsError, strangerCode], [true, 'invalid_api_key'])
    assert.match(String(challenge), /^Bearer realm="animal-store", error="invalid_token"/, 'WWW-Authenticate is readable')
    console.log(`# browser run: ${Math.round(performance.now() - started)} ms`)
  })
})
