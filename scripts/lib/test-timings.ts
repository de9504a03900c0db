// Where a suite's time went, across its runs (scripts/test.ts runs some files beside the rest):
// each run's test-timings-reporter.ts writes its timings and counts to a file, and the
// suite ends with one closing over all of them: the ten slowest files and tests, the counts, the wall time.
import { readFileSync } from 'node:fs'

/** How many files and tests the closing lists name. */
const SLOWEST = 10

/** A file or a test and how long it took (ms). */
export interface Timing {
  name: string
  ms: number
}

/** What one run's reporter records: file and test durations, and how many tests passed, failed and were skipped. */
export interface RunTimings {
  files: Timing[]
  tests: Timing[]
  pass: number
  fail: number
  skipped: number
}

/** The RunTimings a reporter wrote to `path`; none (empty) if it wrote nothing, as when its run failed to start. */
export function readTimings(path: string): RunTimings {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as RunTimings
  } catch {
    return { files: [], tests: [], pass: 0, fail: 0, skipped: 0 }
  }
}

/** The suite's closing lines over `runs`: the slowest files and tests, the counts, then `wallMs` (ms) as minutes and seconds. */
export function closingLines(runs: RunTimings[], wallMs: number): string {
  const files = runs.flatMap((run) => run.files)
  const tests = runs.flatMap((run) => run.tests)
  const slowest = (timings: Timing[]) =>
    timings
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SLOWEST)
      .map(({ name, ms }) => `ℹ ${(ms / 1000).toFixed(1).padStart(6)} s  ${name}\n`)
      .join('')
  const sum = (count: (run: RunTimings) => number) => runs.reduce((total, run) => total + count(run), 0)
  const wall = Math.round(wallMs / 1000)
  return (
    `ℹ slowest files (of ${files.length}; seconds: a file's own process from start to exit, or its tests in the shared one):\n${slowest(files)}` +
    `ℹ slowest tests (of ${tests.length}; seconds):\n${slowest(tests)}` +
    `ℹ the whole suite: ${sum((run) => run.pass)} passed, ${sum((run) => run.fail)} failed, ${sum((run) => run.skipped)} skipped\n` +
    `ℹ wall time of the test run: ${Math.floor(wall / 60)} min ${wall % 60} s\n`
  )
}
