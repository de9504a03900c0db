// Every TypeScript block of the repository README and the client's README that uses the shipped
// client type-checks as a user's own code would, under the strictest common settings (`strict`, `noUncheckedIndexedAccess`,
// `exactOptionalPropertyTypes`), against the package's emitted declarations (`skipLibCheck` off).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const READMES = ['README.md', 'clients/typescript/README.md']

/**
 * The ```ts blocks of a Markdown file that import the shipped client, in order. The README's
 * generated-client recipes import what their generators write; test/docs/openapi-generators.test.ts
 * generates and runs those.
 */
function tsBlocks(path: string): string[] {
  return [...readFileSync(join(ROOT, path), 'utf8').matchAll(/^```ts\n([\s\S]*?)^```$/gm)]
    .map((match) => match[1] as string)
    .filter((block) => block.includes("from '@animal-store/client'"))
}

/** The compiler options a careful user has, plus where the package's declarations are. */
function userTsconfig(declarations: string): object {
  return {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2023'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      skipLibCheck: false,
      noEmit: true,
      types: ['node'],
      paths: { '@animal-store/client': [join(declarations, 'index.d.ts')] },
    },
    include: ['*.mts'],
  }
}

describe("the READMEs' TypeScript, under exactOptionalPropertyTypes", () => {
  it('has blocks to check in both READMEs', () => {
    for (const readme of READMES) assert.ok(tsBlocks(readme).length > 0, readme)
  })

  it('type-checks every block against the emitted declarations, with no error', async () => {
    // Under the repository's ignored .tmp/, so that @types/node resolves from its node_modules.
    mkdirSync(join(ROOT, '.tmp'), { recursive: true })
    const dir = mkdtempSync(join(ROOT, '.tmp', 'readme-types-'))
    try {
      const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
      const declarations = join(dir, 'declarations')
      await promisify(execFile)(process.execPath, [
        tsc,
        '-p',
        join(ROOT, 'clients/typescript'),
        '--emitDeclarationOnly',
        '--outDir',
        declarations,
      ])
      for (const [i, block] of READMES.flatMap(tsBlocks).entries()) writeFileSync(join(dir, `block-${i}.mts`), block)
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(userTsconfig(declarations)))
      const checked = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(
        () => '',
        (error: { stdout: string }) => error.stdout,
      )
      assert.equal(checked, '', 'tsc reports no error')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
