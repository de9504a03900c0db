// The dependency facts in docs/security.md and CI: the production tree listed there is the one
// `npm ls` reports, and an audit that cannot reach the advisory endpoint says NOT CHECKED, repeated
// in CI's output just before the last test run, instead of passing silently.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { readProductionTree, renderDependencyTree } from '../../scripts/dependency-tree.js'
import { readBlock } from '../../scripts/doc-block.js'
import { tempDir } from '../../scripts/lib/test-server.js'
import { REPO_ROOT } from '../support/cli-process.js'

const run = promisify(execFile)

describe('docs/security.md dependency list', () => {
  it('equals the production tree of `npm ls --omit=dev --all --json` (else run `npm run deps-doc`)', async () => {
    const documented = readBlock(readFileSync(join(REPO_ROOT, 'docs/security.md'), 'utf8'), 'dependencies')
    assert.equal(documented, renderDependencyTree(await readProductionTree(REPO_ROOT)), 'run `npm run deps-doc` and commit')
  })

  it('lists every production dependency of package.json at the top level, with its installed version', () => {
    const documented = readBlock(readFileSync(join(REPO_ROOT, 'docs/security.md'), 'utf8'), 'dependencies')
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
    for (const name of Object.keys(manifest.dependencies)) {
      const { version } = JSON.parse(readFileSync(join(REPO_ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string
      }
      assert.ok(documented.split('\n').includes(`${name}@${version}`), `${name}@${version} is not listed`)
    }
  })
})

describe('scripts/audit.sh', () => {
  it('passes but prints and records "NOT CHECKED" when the advisory endpoint is unreachable', async () => {
    const dir = tempDir()
    try {
      const resultFile = join(dir.path, 'audit-result')
      const { stdout } = await run('bash', ['scripts/audit.sh'], {
        cwd: REPO_ROOT,
        // Nothing listens on port 1: the audit request fails at once, here or anywhere.
        env: { ...process.env, npm_config_registry: 'http://127.0.0.1:1/', AUDIT_RESULT_FILE: resultFile },
        timeout: 60_000,
      })
      assert.match(stdout.split('\n')[0] ?? '', /^npm audit: NOT CHECKED - /)
      assert.match(readFileSync(resultFile, 'utf8'), /^npm audit: NOT CHECKED - /)
    } finally {
      dir.remove()
    }
  })

  it('has its result repeated in .ci/run before the last test run (whose summary closes the output)', () => {
    const ci = readFileSync(join(REPO_ROOT, '.ci/run'), 'utf8')
    assert.match(ci, /^export AUDIT_RESULT_FILE$/m)
    const repeat = ci.search(/^echo "== dependency audit: \$\(cat "\$AUDIT_RESULT_FILE"\)"$/m)
    assert.ok(repeat > ci.indexOf('scripts/audit.sh'), 'the result is repeated after the audit ran')
    assert.ok(repeat < ci.lastIndexOf('npm test'), 'and before the last test run')
  })
})
