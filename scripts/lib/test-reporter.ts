// The suite's node:test reporter (scripts/test.ts): node's spec reporter, except that the coverage
// table (one row per file) is replaced by one line, src/'s line coverage against the floor. (Where
// the time went is test-timings-reporter.ts's.)
// Threshold failures still show: node reports them as diagnostics, which spec prints.
import { Transform, type TransformCallback } from 'node:stream'
import type { TestEvent } from 'node:test/reporters'
import { spec } from 'node:test/reporters'

export default class SuiteReporter extends Transform {
  readonly #spec = new spec()

  constructor() {
    super({ writableObjectMode: true })
    this.#spec.on('data', (chunk) => this.push(chunk))
  }

  override _transform(event: TestEvent, _encoding: BufferEncoding, done: TransformCallback): void {
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
    this.#spec.once('end', () => done())
    this.#spec.end()
  }
}
