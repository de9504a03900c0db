// docs/benchmarks.md against bench/: the targets and the option defaults the document states are the ones the bench
// judges and reads (the bench itself is not run here).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { targets } from '../../bench/report.js'
import { readSettings } from '../../bench/run.js'

const doc = readFileSync(new URL('../../docs/benchmarks.md', import.meta.url), 'utf8')

/** The cells of the markdown table rows of `text` whose first cell matches `first` (a RegExp source). */
function rows(first: string, text = doc): string[][] {
  return [...text.matchAll(new RegExp(`^\\| (${first}) \\|(.*)\\|$`, 'gm'))].map(([, head, rest]) => [
    head as string,
    ...(rest as string).split('|').map((cell) => cell.trim()),
  ])
}

describe('docs/benchmarks.md', () => {
  it('states every target the bench judges, with its threshold, and no other', () => {
    const section = doc.slice(doc.indexOf('\n## Targets\n'), doc.indexOf('\n## ', doc.indexOf('\n## Targets\n') + 1))
    const stated = rows('\\([a-z]\\) [^|]+|(?:PostgreSQL )?CPU per request[^|]+|p99 at half[^|]+|peak RSS[^|]+', section).map(
      (cells) => `${cells[0]} | ${cells[1]}`,
    )
    assert.deepEqual(
      stated,
      targets().map((target) => `${target.what} | ${target.threshold}`),
    )
  })

  it('states the defaults the bench reads for each numeric option, in each mode', () => {
    const modes = [readSettings([]), readSettings(['--quick']), readSettings(['--soak'])]
    const fields = {
      '--duration': 'durationS',
      '--rounds': 'rounds',
      '--warmup': 'warmupS',
      '--connections': 'connections',
    } as const
    for (const [option, field] of Object.entries(fields)) {
      const cells = rows(`\`${option} N\``)[0] ?? []
      assert.deepEqual(
        cells.slice(1, 4),
        modes.map((settings) => String(settings[field])),
        option,
      )
    }
  })

  it('refuses an unknown option or an out-of-range value, naming it', () => {
    assert.throws(() => readSettings(['--rounds', '0']), /--rounds must be an integer from 1 to 9/)
    assert.throws(() => readSettings(['--databases', 'mysql']), /--databases: unknown mysql/)
    assert.throws(() => readSettings(['--fast']), /--fast/)
  })
})
