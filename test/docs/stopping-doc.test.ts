// What the docs say about stopping and rolling restarts, read from the code and deploy/nginx.conf:
// the window in which a repeated SIGTERM is the same stop (docs/operating.md, the README), and
// docs/deploying.md's nginx figures and the shortest drain a rolling restart behind it needs.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { SIGTERM_REPEAT_WINDOW_MS } from '../../src/server/stop-signals.js'
import { CONF } from '../support/nginx.js'
import { nginxRetryMs } from '../support/nginx-retry.js'

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

/** The value of `name=` on deploy/nginx.conf's instance lines, the same on each. */
function upstreamOption(name: string): string {
  const values = new Set([...CONF.matchAll(new RegExp(`^\\s*server api-\\d:8080[^;]*\\b${name}=(\\w+)`, 'gm'))].map((m) => m[1]))
  assert.equal(values.size, 1, `one ${name} on every instance`)
  return [...values][0] as string
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

describe('docs/deploying.md on deploy/nginx.conf', () => {
  const failTimeout = Number(upstreamOption('fail_timeout').replace(/s$/, ''))
  const maxFails = upstreamOption('max_fails')

  it("states the conf's max_fails and fail_timeout, and when nginx tries an instance again", () => {
    const text = section(read('docs/deploying.md'), '## Load balancer (`deploy/nginx.conf`)')
    assert.ok(text.includes(`drops an instance after ${maxFails} failures in ${failTimeout} s`), text)
    assert.ok(text.includes(`tries it again ${failTimeout}–${failTimeout + 1} s later`), text)
  })

  it('gives the shortest drain for a rolling restart behind it, and its keepalive pool', () => {
    const text = section(read('docs/deploying.md'), '### A rolling restart behind `deploy/nginx.conf`')
    assert.ok(text.includes(`(\`fail_timeout=${failTimeout}s\``), text)
    assert.ok(text.includes(`**\`SHUTDOWN_DRAIN_MS\` above ${nginxRetryMs()}**`), text)
    const keepalive = /^\s*keepalive (\d+);/m.exec(CONF)?.[1]
    assert.ok(keepalive && text.includes(`\`keepalive\` pool (${keepalive})`), text)
  })
})
