// `npm run screenshot`: regenerates the README's picture of the API reference page
// (docs/images/docs-page.png) from the page as it is now: a throwaway service on 127.0.0.1 with one
// pet, Debian's Chromium (scripts/lib/chromium.ts) opening /docs, a key entered under Authorize, and
// listPets executed from the page. `--out PATH` writes elsewhere (the test suite writes to a
// temporary folder).
import { mkdirSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { launchChromium } from './lib/chromium.js'
import { call, startServer } from './lib/test-server.js'

/** Where the README's picture lives. */
const README_PICTURE = fileURLToPath(new URL('../docs/images/docs-page.png', import.meta.url))
/** The browser window, in CSS pixels: wide enough for Swagger UI's two-column layout. */
const VIEWPORT = { width: 1280, height: 1600 }

/**
 * Opens the page of the service at `origin`, authorizes with `key`, executes listPets and writes a
 * PNG of the page from its top to the end of the live answer to `out` (the key shown as `ask_...`). Throws when a step's element
 * does not appear (Playwright's own timeout, 30 s).
 */
async function screenshotDocsPage(origin: string, key: string, out: string): Promise<void> {
  const browser = await launchChromium()
  try {
    const page = await browser.newPage({ viewport: VIEWPORT })
    await page.goto(`${origin}/docs`)
    await page.locator('#operations-pets-listPets').waitFor()
    await page.locator('button.authorize').first().click()
    await page.locator('.auth-container input').fill(key)
    await page.locator('.auth-btn-wrapper button.authorize').click()
    await page.locator('.auth-btn-wrapper button.btn-done').click()
    const listPets = page.locator('#operations-pets-listPets')
    await listPets.locator('.opblock-summary-control').click()
    await listPets.locator('button.execute').click()
    const answer = listPets.locator('.live-responses-table .response')
    await answer.locator('.response-col_status', { hasText: '200' }).waitFor()
    // The key appears in the page's curl command: shown as the README writes it, never as a real one.
    await listPets.locator('.curl-command').evaluate((element: any, secret: string) => {
      element.innerHTML = element.innerHTML.replaceAll(secret, 'ask_...')
    }, key)
    const box = await answer.boundingBox()
    if (!box) throw new Error('the answer to listPets is not on the page')
    mkdirSync(dirname(out), { recursive: true })
    await page.screenshot({
      path: out,
      fullPage: true,
      clip: { x: 0, y: 0, width: VIEWPORT.width, height: box.y + box.height + 24 },
    })
  } finally {
    await browser.close()
  }
}

const { values } = parseArgs({ options: { out: { type: 'string' } } })
const out = values.out ? resolve(values.out) : README_PICTURE
const server = await startServer()
try {
  const created = await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })
  if (created.status !== 201) throw new Error(`creating the pet shown answered ${created.status}`)
  await screenshotDocsPage(server.origin, server.key, out)
  console.log(`wrote ${out}`)
} finally {
  await server.close()
}
