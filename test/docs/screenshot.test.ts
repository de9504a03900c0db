// The README's picture of /docs (docs/images/docs-page.png) is made by a script anyone can run,
// `npm run screenshot`: here it runs into a temporary folder, and a PNG of the page must come out.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { tempDir } from '../../scripts/lib/test-server.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
/** The 8 bytes every PNG starts with (PNG specification, 5.2). */
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

describe('npm run screenshot (the README picture of /docs)', () => {
  it('is the npm script, and the README shows the picture it writes', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
    assert.equal(manifest.scripts.screenshot, 'tsx scripts/screenshot.ts')
    assert.match(readFileSync(join(ROOT, 'README.md'), 'utf8'), /\]\(docs\/images\/docs-page\.png\)/)
    assert.match(readFileSync(join(ROOT, 'scripts/screenshot.ts'), 'utf8'), /'\.\.\/docs\/images\/docs-page\.png'/)
  })

  it('writes a PNG of the page, 1280 px wide, with a listPets answer, into the folder given', async () => {
    const dir = tempDir()
    try {
      const out = join(dir.path, 'docs-page.png')
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/screenshot.ts', '--out', out], {
        cwd: ROOT,
        timeout: 180_000,
      })
      assert.equal(stdout.trim(), `wrote ${out}`)
      const png = readFileSync(out)
      assert.deepEqual(png.subarray(0, 8), PNG_SIGNATURE)
      assert.equal(png.toString('latin1', 12, 16), 'IHDR')
      const [width, height] = [png.readUInt32BE(16), png.readUInt32BE(20)]
      assert.equal(width, 1280)
      // The page's top, the opened listPets and its live answer: far taller than one screen's info block.
      assert.ok(height > 1200 && height < 6000, `${width}×${height}`)
    } finally {
      dir.remove()
    }
  })
})
