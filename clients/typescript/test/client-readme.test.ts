// The README's TypeScript client example (clients/typescript/examples/quick-start.ts) is the one the
// README shows, and it runs as printed against a live server.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { startServer, type TestServer, tempDir } from '../../../scripts/lib/test-server.js'

const root = new URL('../../..', import.meta.url)
const example = readFileSync(new URL('clients/typescript/examples/quick-start.ts', root), 'utf8')
/** The example as the README shows it: without its first line (the file's own comment). */
const shown = example.slice(example.indexOf('\n') + 1)

describe('README: TypeScript client example', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  it('is shown in the README exactly as clients/typescript/examples/quick-start.ts has it', () => {
    assert.ok(readFileSync(new URL('README.md', root), 'utf8').includes(`\`\`\`ts\n${shown}\`\`\``))
  })

  it('runs against a live server: exact bigints, every page, a typed 400', async () => {
    const dir = tempDir()
    try {
      const file = join(dir.path, 'quick-start.mts')
      const source = new URL('clients/typescript/src/index.ts', root).pathname
      writeFileSync(file, example.replace("from '@animal-store/client'", `from '${source}'`))
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
        cwd: root.pathname,
        env: { ...process.env, ANIMAL_STORE_URL: `${server.origin}/v1`, ANIMAL_STORE_KEY: server.key },
      })
      const lines = stdout.split('\n')
      assert.equal(lines[0], '1n 9007199254740993n')
      assert.equal(lines[1], '1n Rex')
      assert.match(lines.slice(2).join('\n').trimEnd(), /^400 invalid_request \[\s*\{[\s\S]*field: 'limit'[\s\S]*\] \S+$/)
    } finally {
      dir.remove()
    }
  })
})
