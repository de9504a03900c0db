// The suite's second node:test reporter (scripts/test.ts): where the run's time went, as one JSON
// RunTimings (test-timings.ts) written to its destination once the run ends: each file's duration
// (its whole process, start-up included; in a run of all files in one process, the sum of its
// top-level tests and suites), each test's (not suites'), named with its suites, and the counts.
// scripts/test.ts closes the suite from the files of all its runs.
// Node loads reporters without tsx's mapping of `.js` imports to `.ts` files: this one imports types only.
import { relative, resolve } from 'node:path'
import type { TestEvent } from 'node:test/reporters'
import type { RunTimings } from './test-timings.js'

/** Whether this run takes all its files in one process (node:test's isolation `none`), under either name of the flag. */
const ONE_PROCESS = process.execArgv.some((arg) => /^--(experimental-)?test-isolation=none$/.test(arg))

/**
 * Reads the run's events and yields its RunTimings as JSON at the end. Events come in report order (a
 * file's events together, each test's start before its result, a suite's result after its tests'),
 * so the suites of a test are the names last started at the levels above it. A file's duration is
 * the `test:complete` of the test named by its path, as the runner was given it; in a run of all
 * files in one process, the sum of its top-level results instead. A top-level suite counts for the
 * file of its first test, not for the helper that declared it (test-server.ts
 * describeEachDatabase), which node:test gives as its file.
 */
export default async function* timingsReporter(events: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const timings: RunTimings = { files: [], tests: [], pass: 0, fail: 0, skipped: 0 }
  const open: string[] = []
  const processes = new Map<string, number>()
  const topLevel = new Map<string, number>()
  let firstTestFile: string | undefined
  for await (const event of events) {
    if (event.type === 'test:start') {
      open.length = event.data.nesting
      open.push(event.data.name)
    } else if (event.type === 'test:complete') {
      const { file, name, nesting, details } = event.data
      if (nesting === 0 && file !== undefined && resolve(name) === file) processes.set(file, details.duration_ms)
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const { file, name, nesting, details } = event.data
      if (nesting > 0) firstTestFile ??= file
      else if (file !== undefined) {
        const owner = firstTestFile ?? file
        topLevel.set(owner, (topLevel.get(owner) ?? 0) + details.duration_ms)
        firstTestFile = undefined
      }
      if (details.type === 'suite') continue
      const where = file === undefined ? '' : ` (${relative(process.cwd(), file)})`
      timings[event.type === 'test:fail' ? 'fail' : event.data.skip ? 'skipped' : 'pass']++
      timings.tests.push({ name: `${[...open.slice(0, nesting), name].join(' › ')}${where}`, ms: details.duration_ms })
    }
  }
  const files = ONE_PROCESS ? new Map([...processes, ...topLevel]) : processes
  for (const [file, ms] of files) timings.files.push({ name: relative(process.cwd(), file), ms })
  yield JSON.stringify(timings)
}
