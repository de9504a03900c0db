// The examples of /docs, executed from the page in a real browser (Debian's chromium driven by
// playwright-core) as a person would: Authorize with a key, pick each request example, Execute. Each
// is sent with the document's exact digits (int64 beyond 2^53 included), answered 201 and stored as
// sent, and the page shows the digits the service returned. Also: an opened operation names the
// headers it shares with other responses in one line instead of a table row each, and shows error
// bodies on demand.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, it } from 'node:test'
import { parse as parseLossless, stringify } from 'lossless-json'
import type { Locator, Page } from 'playwright-core'
import { launchChromium } from '../../scripts/lib/chromium.js'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { parseJsonNumber } from '../../src/int64.js'

/** The committed document, parsed with every digit kept. */
const DOCUMENT = parseLossless(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8')) as any
const REQUEST_EXAMPLES: Record<string, { value: unknown }> =
  DOCUMENT.paths['/pets'].post.requestBody.content['application/json'].examples

/** A laptop's window: the page's layout is judged in screens of this size. */
const VIEWPORT = { width: 1280, height: 1000 }

/** Opens an operation's panel; its height in CSS px once open. */
async function open(page: Page, operationId: string): Promise<{ operation: Locator; height: number }> {
  const operation = page.locator(`#operations-pets-${operationId}`)
  await operation.locator('.opblock-summary-control').click()
  await operation.locator('.responses-wrapper').waitFor()
  return { operation, height: Math.round((await operation.boundingBox())?.height ?? 0) }
}

/** Clicks Execute; the status the page shows and the response body text it shows. */
async function execute(page: Page, operation: Locator, path: RegExp): Promise<{ status: number; shown: string }> {
  const answered = page.waitForResponse((response) => path.test(new URL(response.url()).pathname))
  await operation.locator('button.execute').click()
  const status = (await answered).status()
  const live = operation.locator('.live-responses-table .response')
  await live.locator('.response-col_status', { hasText: String(status) }).waitFor()
  const shown = await live.locator('.response-col_description pre').first().innerText()
  await operation.locator('button.btn-clear').click()
  return { status, shown }
}

describeEachDatabase('/docs in a browser: every request example executes as written', (database) => {
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
  })
  after(() => server.close())

  it('sends each createPet example with its exact digits (201, stored as sent), and shows answers with the digits the service sent', async (t) => {
    assert.deepEqual(Object.keys(REQUEST_EXAMPLES), ['minimal', 'exact', 'beyond2to53'])
    const browser = await launchChromium()
    try {
      const page = await browser.newPage({ viewport: VIEWPORT })
      const problems: string[] = []
      page.on('pageerror', (error) => problems.push(error.message))
      await page.goto(`${server.origin}/docs`)
      await page.locator('.opblock').first().waitFor()
      await page.locator('button.authorize').first().click()
      await page.locator('.auth-container input').fill(server.key)
      await page.locator('.auth-btn-wrapper button.authorize').click()
      await page.locator('.auth-btn-wrapper button.btn-done').click()

      const { operation: createPet } = await open(page, 'createPet')
      // The documented 201 example, as written in the document (id 2^53+1, categoryId 2^63-1).
      const added = DOCUMENT.paths['/pets'].post.responses['201'].content['application/json'].examples.added.value
      await createPet.locator('.responses-wrapper .response[data-code="201"] .example', { hasText: '9007199254740993' }).waitFor()
      assert.equal(
        await createPet.locator('.responses-wrapper .response[data-code="201"] .example').first().innerText(),
        stringify(added, null, 2),
      )
      const select = createPet.locator('.opblock-section-request-body select.examples-select-element')
      const ids: bigint[] = []
      for (const [name, example] of Object.entries(REQUEST_EXAMPLES)) {
        await select.selectOption(name)
        const body = createPet.locator('textarea.body-param__text')
        assert.equal(await body.inputValue(), stringify(example.value, null, 2), `${name}: the body as the document has it`)
        const { status, shown } = await execute(page, createPet, /^\/v1\/pets$/)
        assert.equal(status, 201, `${name}: ${shown}`)
        const answer = parseLossless(shown, null, parseJsonNumber) as { id: bigint; categoryId: bigint }
        const sent = parseLossless(stringify(example.value) ?? '', null, parseJsonNumber) as { categoryId: bigint }
        assert.equal(answer.categoryId, sent.categoryId, `${name}: the page shows the categoryId sent`)
        const stored = await call(server, 'GET', `/v1/pets/${answer.id}`)
        assert.equal(stored.exact.categoryId, sent.categoryId, `${name}: stored exactly`)
        assert.equal(stored.text.includes(`"categoryId":${sent.categoryId}`), true, `${name}: the service sent ${stored.text}`)
        ids.push(answer.id)
        t.diagnostic(`createPet example ${name}: ${status}, categoryId ${answer.categoryId}`)
      }

      // listPets and getPet from the page: the answers shown with the digits of the wire.
      const { operation: listPets } = await open(page, 'listPets')
      const list = await execute(page, listPets, /^\/v1\/pets$/)
      assert.equal(list.status, 200)
      assert.match(list.shown, /"categoryId": 9223372036854775807,/)
      assert.match(list.shown, /"categoryId": 9007199254740993,/)
      t.diagnostic(`listPets (default limit): ${list.status}`)
      const { operation: getPet } = await open(page, 'getPet')
      await getPet.locator('tr[data-param-name="petId"] input').fill(String(ids[1]))
      const one = await execute(page, getPet, /^\/v1\/pets\/\d+$/)
      assert.equal(one.status, 200)
      assert.match(one.shown, /"categoryId": 9223372036854775807,/)
      t.diagnostic(`getPet ${ids[1]}: ${one.status}`)
      assert.deepEqual(problems, [])
    } finally {
      await browser.close()
    }
  })

  it('fits an opened operation in two screens: shared headers named in one line (described at the top), an error response in a few lines, Error bodies on demand', async (t) => {
    const browser = await launchChromium()
    try {
      const page = await browser.newPage({ viewport: VIEWPORT })
      await page.goto(`${server.origin}/docs`)
      await page.locator('.opblock').first().waitFor()
      await page.getByText('Headers on many responses.').waitFor()
      const heights: string[] = []
      for (const operationId of ['listPets', 'createPet', 'getPet']) {
        const { operation, height } = await open(page, operationId)
        heights.push(`${operationId} ${height} px`)
        assert.ok(height <= 2 * VIEWPORT.height, `${operationId} opened is ${height} px tall: more than two screens`)
        const responses = operation.locator('.responses-wrapper tr.response')
        const count = await responses.count()
        assert.ok(count >= 8, `${operationId}: ${count} responses`)
        // No shared header has a table row of its own; each response names them in one line.
        assert.equal(await operation.locator('.responses-wrapper td.header-col', { hasText: /^X-Request-Id$/ }).count(), 0)
        assert.equal(await operation.locator('.responses-wrapper .headers-shared', { hasText: 'X-Request-Id' }).count(), count)
        await operation.locator('.opblock-summary-control').click()
      }
      // Retry-After says something else on 429 than on 409: a line of that response's own.
      const createPet = page.locator('#operations-pets-createPet')
      await createPet.locator('.opblock-summary-control').click()
      const tooMany = createPet.locator('.responses-wrapper tr.response[data-code="429"]')
      assert.match(
        await tooMany.locator('.headers-own').innerText(),
        /^Retry-After\s+RFC 9110 §10\.2\.3: seconds until the window resets/,
      )
      assert.equal(
        await tooMany.locator('.headers-shared').innerText(),
        'Headers: X-Request-Id, Cache-Control, X-Content-Type-Options, Access-Control-Allow-Origin, RateLimit, RateLimit-Policy',
      )
      // An error response's Error body opens on demand, with its examples.
      const invalid = createPet.locator('.responses-wrapper tr.response[data-code="400"]')
      assert.equal(await invalid.locator('.model-example').count(), 0)
      await invalid.locator('button.error-body-show').click()
      await invalid.locator('.model-example', { hasText: '"code": "invalid_request"' }).waitFor()
      t.diagnostic(`opened operation heights at 1280 px wide: ${heights.join(', ')}`)
    } finally {
      await browser.close()
    }
  })
})
