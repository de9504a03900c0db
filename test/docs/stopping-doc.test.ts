// What the docs say about stopping, read from the code: the window in which a repeated SIGTERM is
// the same stop (docs/operating.md, the README).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { SIGTERM_REPEAT_WINDOW_MS } from '../../src/server/stop-signals.js'

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')

/** The text of a `#`-level `heading` section of `text` (up to the next heading of that level or above). */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n${heading}\n`)
  assert.ok(start >= 0, `no "${heading}" section`)
  const level = /^#+/.exec(heading)?.[0].length ?? 2
  const next = new RegExp(`\\n#{1,${level}} `, 'g')
  next.lastIndex = start + heading.length + 1
  const end = next.exec(text)?.index
  return text.slice(start, end).replaceAll(/\s+/g, ' ')
}

describe('docs/operating.md, "Stopping the service"', () => {
  const text = section(read('docs/operating.md'), '## Stopping the service')

  it(`gives the window of a repeated SIGTERM as SIGTERM_REPEAT_WINDOW_MS (${SIGTERM_REPEAT_WINDOW_MS} ms)`, () => {
    const windows = [...text.matchAll(/SIGTERM (?:within|later than) (\d+(?:\.\d+)?) s\b/g)].map((m) => Number(m[1]) * 1000)
    assert.equal(windows.length, 2, text)
    for (const window of windows) assert.equal(window, SIGTERM_REPEAT_WINDOW_MS)
  })
})

describe("the README's Shutdown bullet", () => {
  it('gives the same window', () => {
    const readme = read('README.md')
    const bullet = readme.slice(readme.indexOf('- **Shutdown**'), readme.indexOf('\n- **', readme.indexOf('- **Shutdown**') + 1))
    const window = /second SIGTERM more than (\d+(?:\.\d+)?) s later/.exec(bullet.replaceAll(/\s+/g, ' '))?.[1]
    assert.equal(Number(window) * 1000, SIGTERM_REPEAT_WINDOW_MS, bullet)
  })
})
