// The TypeScript client's generated files match openapi.json (no drift), the package builds with
// tsc, and the hand-written deprecation note on getPet names the sunset date openapi.json states.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../../../scripts/lib/test-server.js'
import { GENERATED_DIR, generate, OPENAPI_PATH } from '../scripts/generate.js'

const root = new URL('../../..', import.meta.url)

describe('TypeScript client package (clients/typescript)', () => {
  for (const file of ['schema.ts', 'int64-fields.ts']) {
    it(`src/generated/${file} is exactly what openapi.json generates (run \`npm run generate -w clients/typescript\`)`, async () => {
      const dir = tempDir()
      try {
        await generate(dir.path)
        assert.equal(readFileSync(join(dir.path, file), 'utf8'), readFileSync(join(GENERATED_DIR, file), 'utf8'))
      } finally {
        dir.remove()
      }
    })
  }

  it('builds with tsc (declarations included)', async () => {
    const dir = tempDir()
    try {
      const tsc = new URL('node_modules/typescript/bin/tsc', root).pathname
      const project = new URL('clients/typescript', root).pathname
      await promisify(execFile)(process.execPath, [tsc, '-p', project, '--outDir', dir.path])
      assert.match(readFileSync(join(dir.path, 'index.d.ts'), 'utf8'), /createClient/)
    } finally {
      dir.remove()
    }
  })

  it('marks getPet @deprecated with the sunset date openapi.json gives', () => {
    const getPet = JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')).paths['/pets/{petId}'].get
    assert.equal(getPet.deprecated, true)
    const sunset = /Sunset: ([^)]+)\)/.exec(getPet.description)?.[1]
    assert.ok(sunset, 'openapi.json states the sunset date of getPet')
    const source = readFileSync(new URL('clients/typescript/src/client.ts', root), 'utf8')
    assert.match(source, new RegExp(`@deprecated Sunset: ${sunset}[^]*\\n\\s*getPet\\(`))
  })
})
