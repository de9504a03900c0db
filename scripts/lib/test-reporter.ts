// The suite's node:test reporter (scripts/test.ts): node's spec reporter, except that the coverage
// table (one row per file) is replaced by one line, src/'s line coverage against the floor, and that
// the run ends with where its time went: the ten slowest files and tests, and its wall time.
// Threshold failures still show: node reports them as diagnostics, which spec prints.
import { relative, resolve } from 'node:path'
import { Transform, type TransformCallback } from 'node:stream'
import type { TestEvent } from 'node:test/reporters'
import { spec } from 'node:test/reporters'

/** How many files and tests the closing lists name. */
const SLOWEST = 10

/** A file or a test and how long it took (ms). */
interface Timing {
  name: string
  ms: number
}

export default class SuiteReporter extends Transform {
  readonly #spec = new spec()
  readonly #startedAt = Date.now()
  readonly #files: Timing[] = []
  readonly #tests: Timing[] = []
  /** The names of the tests last started at each nesting level: the suites of the next result. */
  readonly #open: string[] = []

  constructor() {
    super({ writableObjectMode: true })
    this.#spec.on('data', (chunk) => this.push(chunk))
  }

  override _transform(event: TestEvent, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#time(event)
    if (event.type !== 'test:coverage') {
      this.#spec.write(event, () => done())
      return
    }
    const { coveredLineCount, totalLineCount, coveredLinePercent } = event.data.summary.totals
    const floor = process.execArgv.find((arg) => arg.startsWith('--test-coverage-lines='))?.split('=')[1]
    this.push(
      `ℹ line coverage of src/: ${coveredLinePercent.toFixed(2)} % (${coveredLineCount} of ${totalLineCount} lines)` +
        `${floor ? `, floor ${floor} %` : ''}\n`,
    )
    done()
  }

  override _flush(done: TransformCallback): void {
    this.#spec.once('end', () => {
      this.push(this.#closing())
      done()
    })
    this.#spec.end()
  }

  /**
   * Records durations: a file's (its whole process, start-up included: the `test:complete` of the
   * test named by its path, as the runner was given it) and each test's (not suites'), named with its suites. Events come in
   * report order (a file's events together, each test's start before its result), so the suites of a
   * test are the names last started at the levels above it.
   */
  #time(event: TestEvent): void {
    if (event.type === 'test:start') {
      this.#open.length = event.data.nesting
      this.#open.push(event.data.name)
    } else if (event.type === 'test:complete') {
      const { file, name, nesting, details } = event.data
      if (nesting === 0 && file !== undefined && resolve(name) === file) {
        this.#files.push({ name: relative(process.cwd(), file), ms: details.duration_ms })
      }
    } else if ((event.type === 'test:pass' || event.type === 'test:fail') && event.data.details.type !== 'suite') {
      const { file, name, nesting, details } = event.data
      const where = file === undefined ? '' : ` (${relative(process.cwd(), file)})`
      this.#tests.push({ name: `${[...this.#open.slice(0, nesting), name].join(' › ')}${where}`, ms: details.duration_ms })
    }
  }

  /** The closing lines: the slowest files and tests, then the run's wall time. */
  #closing(): string {
    const slowest = (timings: Timing[]) =>
      timings
        .sort((a, b) => b.ms - a.ms)
        .slice(0, SLOWEST)
        .map(({ name, ms }) => `ℹ ${(ms / 1000).toFixed(1).padStart(6)} s  ${name}\n`)
        .join('')
    const wall = (Date.now() - this.#startedAt) / 1000
    return (
      `ℹ slowest files (of ${this.#files.length}; seconds, the file's process from start to exit):\n${slowest(this.#files)}` +
      `ℹ slowest tests (of ${this.#tests.length}; seconds):\n${slowest(this.#tests)}` +
      `ℹ wall time of the test run: ${Math.floor(wall / 60)} min ${(wall % 60).toFixed(0)} s\n`
    )
  }
}
