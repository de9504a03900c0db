// One source for the configuration: VARIABLES in src/config.ts declares every variable the code
// reads, once; the README's table and `--help` are generated from it, so neither can drift.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { renderConfigurationTable } from '../../scripts/configuration-table.js'
import { readBlock } from '../../scripts/doc-block.js'
import { CONFIGURATION_VARIABLES, ConfigError, loadConfig, loadCopyUrls, VARIABLES } from '../../src/config.js'
import { assertBuilt, cliEnv, REPO_ROOT, runCli } from '../support/cli-process.js'

const configSource = readFileSync(join(REPO_ROOT, 'src/config.ts'), 'utf8')

/** A VARIABLES entry as JSON Schema, with src/config-variables.ts's keywords. */
type Declared = {
  type?: string
  minimum?: number
  maximum?: number
  anyOf?: Array<{ const: string }>
  default?: unknown
  description: string
  'x-file'?: boolean
  'x-default'?: string
}

describe('the configuration table (CONFIGURATION_VARIABLES)', () => {
  before(assertBuilt)

  it('names exactly the variables src/config.ts reads, with NAME_FILE where a secret may come from a file', () => {
    // What loadConfig and loadCopyUrls look up, recorded: unset, and with tracing on (its other
    // variables are read only then)…
    const looked = new Set<string>()
    const recording = (values: Record<string, string>) =>
      new Proxy(values, {
        get: (target, name) => {
          if (typeof name === 'string') looked.add(name)
          return target[name as string]
        },
        has: (target, name) => {
          if (typeof name === 'string') looked.add(name)
          return name in target
        },
      })
    loadConfig(recording({}), '/w')
    loadConfig(recording({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), '/w')
    assert.throws(() => loadCopyUrls({}, recording({})), ConfigError)
    // …and any variable the source names directly, in case a branch above was not taken.
    const named = [...configSource.matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)].map((match) => match[1] ?? '')
    const read = new Set([...looked, ...named])
    const files = [...read].filter((name) => name.endsWith('_FILE')).map((name) => name.slice(0, -'_FILE'.length))
    assert.deepEqual(
      CONFIGURATION_VARIABLES.map((variable) => variable.name).sort(),
      [...read].filter((name) => !name.endsWith('_FILE')).sort(),
    )
    assert.deepEqual(
      CONFIGURATION_VARIABLES.filter((variable) => variable.file)
        .map((variable) => variable.name)
        .sort(),
      files.sort(),
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

  it("gives each VARIABLES entry's default, bounds and description to its README row and its --help line", async () => {
    const rows = (readBlock(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'), 'configuration') ?? '').split('\n')
    const help = (await runCli(['--help'], cliEnv({}))).stdout.split('\n')
    const plain = (text: string) => text.replaceAll('`', '')
    for (const [name, schema] of Object.entries(VARIABLES)) {
      const entry = schema as Declared
      const shown = entry['x-default'] ?? (entry.default === undefined ? '(none)' : String(entry.default))
      const range = `${entry.minimum}–${entry.maximum}`
      const words = entry.anyOf?.map((option) => `\`${option.const}\``).join(', ') ?? ''
      const meaning = entry.description.replace('{range}', range).replace('{values}', words)
      if (entry.type === 'integer') assert.ok(meaning.includes(range), `${name}'s description states its bounds`)

      const names = entry['x-file'] ? `\`${name}\` or \`${name}_FILE\`` : `\`${name}\``
      const cell = shown === '(none)' || shown.startsWith('`') ? shown : `\`${shown}\``
      assert.ok(rows.includes(`| ${names} | ${cell} | ${meaning.replaceAll('|', '\\|')} |`), `README row of ${name}`)

      const at = help.findIndex((line) => line.startsWith(`  ${name} `))
      assert.ok(at >= 0, `--help lists ${name}`)
      assert.ok(help[at]?.endsWith(`[default: ${plain(shown)}]`), help[at])
      assert.equal(help[at + 1]?.trim(), plain(/^.*?\.(?=\s|$)/.exec(meaning)?.[0] ?? ''), `--help line of ${name}`)
    }
  })

  it('is not repeated in docs/deploying.md, which links to the README instead', () => {
    const deploying = readFileSync(join(REPO_ROOT, 'docs/deploying.md'), 'utf8')
    assert.doesNotMatch(deploying, /^\| Variable \| Default \|/m)
    assert.match(deploying, /\]\(\.\.\/README\.md#configuration\)/)
  })
})
