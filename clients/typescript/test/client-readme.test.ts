// The README's TypeScript client example (clients/typescript/examples/quick-start.ts) is the one the
// README shows, and the README's steps followed in order (the curl step, then the example in the
// same shell) work against a live server, with one key variable throughout.
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
const readme = readFileSync(new URL('README.md', root), 'utf8')

describe('README: TypeScript client example', () => {
  let server: TestServer
  before(async () => {
    server = await startServer()
  })
  after(() => server.close())

  it('is shown in the README exactly as clients/typescript/examples/quick-start.ts has it', () => {
    assert.ok(readme.includes(`\`\`\`ts\n${shown}\`\`\``))
  })

  it('follows the README in order: the curl step exports the key, and the example, run in that shell, uses it', async () => {
    const steps = readme.match(/^```sh\n(export ANIMAL_STORE_KEY=ask_\.\.\.[\s\S]*?)^```$/m)?.[1]
    assert.ok(steps, 'the curl step exports ANIMAL_STORE_KEY')
    const dir = tempDir()
    try {
      const file = join(dir.path, 'example.mts')
      const source = new URL('clients/typescript/src/index.ts', root).pathname
      writeFileSync(file, example.replace("from '@animal-store/client'", `from '${source}'`))
      // The key the banner printed goes where the README says "ask_..."; this server's address
      // where the README has the default one. The example gets no key from the test itself.
      const script = [
        steps.replace('ask_...', server.key).replaceAll('http://127.0.0.1:8080', server.origin),
        'echo "--- example"',
        `${JSON.stringify(process.execPath)} --import tsx ${JSON.stringify(file)}`,
      ].join('\n')
      const env: NodeJS.ProcessEnv = { ...process.env, ANIMAL_STORE_URL: `${server.origin}/v1` }
      delete env.ANIMAL_STORE_KEY
      const { stdout } = await promisify(execFile)('bash', ['-e', '-c', script], { cwd: root.pathname, env })
      const [curl = '', output = ''] = stdout.split('--- example\n')
      assert.match(curl, /"categoryId":9007199254740993/, 'the curl create was accepted')
      const lines = output.split('\n')
      // The example's comment states what it prints when run after the curl step.
      const stated = /console\.log\(rex\.id, rex\.categoryId\) \/\/ bigints, exact: (\S+ \S+)/.exec(example)?.[1]
      assert.equal(lines[0], stated)
      assert.deepEqual(lines.slice(1, 3), ['1n Rex', '2n Rex'])
      assert.match(lines.slice(3).join('\n').trimEnd(), /^400 invalid_request \[\s*\{[\s\S]*field: 'limit'[\s\S]*\] \S+$/)
    } finally {
      dir.remove()
    }
  })

  it('names the key one way in both READMEs: the curl steps and the TypeScript read ANIMAL_STORE_KEY', () => {
    const client = readFileSync(new URL('clients/typescript/README.md', root), 'utf8')
    const names = new Set<string>()
    for (const text of [readme, client, example]) {
      for (const [, name] of text.matchAll(/Bearer \$\{?(?:process\.env\.)?(\w+)/g)) names.add(name as string)
      for (const [, name] of text.matchAll(/export (\w+)=ask_/g)) names.add(name as string)
      for (const [, name] of text.matchAll(/apiKey: [^,\n]*process\.env\.(\w+)/g)) names.add(name as string)
      for (const [, name] of text.matchAll(/"\$(\w*KEY\w*)"/g)) names.add(name as string)
    }
    assert.deepEqual([...names], ['ANIMAL_STORE_KEY'])
  })
})
