// One source for the configuration: CONFIGURATION_VARIABLES in src/config.ts names every variable the
// code reads; the README's table is generated from it and `--help` lists it, so neither can drift.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { renderConfigurationTable } from '../../scripts/configuration-table.js'
import { readBlock } from '../../scripts/doc-block.js'
import { CONFIGURATION_VARIABLES } from '../../src/config.js'
import { assertBuilt, cliEnv, REPO_ROOT, runCli } from '../support/cli-process.js'

const configSource = readFileSync(join(REPO_ROOT, 'src/config.ts'), 'utf8')

describe('the configuration table (CONFIGURATION_VARIABLES)', () => {
  before(assertBuilt)

  it('names exactly the variables src/config.ts reads, with NAME_FILE where a secret may come from a file', () => {
    const plain = [...configSource.matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)].map((match) => match[1])
    const secret = [...configSource.matchAll(/secretVariable\(env, '([A-Z][A-Z0-9_]*)'\)/g)].map((match) => match[1])
    assert.deepEqual(CONFIGURATION_VARIABLES.map((variable) => variable.name).sort(), [...new Set([...plain, ...secret])].sort())
    assert.deepEqual(
      CONFIGURATION_VARIABLES.filter((variable) => variable.file)
        .map((variable) => variable.name)
        .sort(),
      [...new Set(secret)].sort(),
    )
  })

  it('is the only place that reads the environment: no other file in src/ touches process.env', () => {
    const readers: string[] = []
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name)
        if (entry.isDirectory()) walk(path)
        else if (
          path.endsWith('.ts') &&
          !path.endsWith(join('src', 'config.ts')) &&
          /process\.env/.test(readFileSync(path, 'utf8'))
        )
          readers.push(path)
      }
    }
    walk(join(REPO_ROOT, 'src'))
    assert.deepEqual(readers, [])
  })

  it('is the README\'s "Configuration" table, as `npm run config-doc` writes it', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
    assert.equal(readBlock(readme, 'configuration'), renderConfigurationTable(), 'run `npm run config-doc` and commit')
  })

  it('is listed by `animal-store --help`: every variable with its default', async () => {
    const help = await runCli(['--help'], cliEnv({}))
    assert.equal(help.code, 0, help.stderr)
    for (const variable of CONFIGURATION_VARIABLES) {
      const line = help.stdout.split('\n').find((each) => each.trimStart().startsWith(`${variable.name} `))
      assert.ok(line, `--help does not list ${variable.name}`)
      assert.ok(line.includes(`[default: ${variable.default.replaceAll('`', '')}]`), line)
    }
    assert.match(help.stdout, /^ {2}RATE_LIMIT_PER_MINUTE \[default: 60000\]$/m)
  })

  it('is not repeated in docs/deploying.md, which links to the README instead', () => {
    const deploying = readFileSync(join(REPO_ROOT, 'docs/deploying.md'), 'utf8')
    assert.doesNotMatch(deploying, /^\| Variable \| Default \|/m)
    assert.match(deploying, /\]\(\.\.\/README\.md#configuration\)/)
  })
})
