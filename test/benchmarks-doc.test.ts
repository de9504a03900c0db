// docs/benchmarks.md against bench/: the scenario targets and the settings the document states are the ones the
// bench judges and reads (the bench itself is not run here).
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { describe, it } from 'node:test'
import { describeTarget } from '../bench/results.js'
import { FIXED_RATE_P99_MS, PEAK_RSS_MB, SCENARIOS, type Target } from '../bench/scenarios.js'
import { readSettings } from '../bench/settings.js'

const doc = readFileSync(new URL('../docs/benchmarks.md', import.meta.url), 'utf8')

/** The cells of the markdown table rows whose first cell is `first` (a RegExp source). */
function rows(first: string): string[][] {
  return [...doc.matchAll(new RegExp(`^\\| (${first}) \\|(.*)\\|$`, 'gm'))].map(([, head, rest]) => [
    head as string,
    ...(rest as string).split('|').map((cell) => cell.trim()),
  ])
}

function targetText(target: Target | undefined, runs: boolean): string {
  if (!runs) return 'not run'
  return target ? describeTarget(target) : '— (ratio reported)'
}

describe('docs/benchmarks.md', () => {
  it('lists every scenario with the title and the targets bench/scenarios.ts judges it by', () => {
    const table = rows('\\([a-z]\\)')
    assert.deepEqual(
      table.map((cells) => cells[0]),
      SCENARIOS.map((scenario) => `(${scenario.id})`),
    )
    for (const scenario of SCENARIOS) {
      const cells = table.find((each) => each[0] === `(${scenario.id})`) ?? []
      assert.equal(cells[1], scenario.title, `(${scenario.id}) title`)
      assert.equal(cells[4], targetText(scenario.on.sqlite?.target, scenario.on.sqlite !== undefined), `(${scenario.id}) SQLite`)
      assert.equal(
        cells[5],
        targetText(scenario.on.postgres?.target, scenario.on.postgres !== undefined),
        `(${scenario.id}) PostgreSQL`,
      )
    }
  })

  it('states the memory and fixed-rate latency targets the bench judges', () => {
    assert.match(doc, new RegExp(`^\\| Service peak RSS .* \\| ≤ ${PEAK_RSS_MB} MB \\|$`, 'm'))
    assert.match(doc, new RegExp(`^\\| p99 at a fixed rate .* \\| ≤ ${FIXED_RATE_P99_MS} ms \\|$`, 'm'))
  })

  it('states the defaults and quick values the bench reads for each numeric setting', () => {
    const normal = readSettings({})
    const quick = readSettings({ BENCH_QUICK: '1' })
    const fields = {
      BENCH_DURATION_S: 'durationS',
      BENCH_ROUNDS: 'rounds',
      BENCH_WARMUP_S: 'warmupS',
      BENCH_CONNECTIONS: 'connections',
    } as const
    for (const [name, field] of Object.entries(fields)) {
      const cells = rows(`\`${name}\``)[0] ?? []
      assert.deepEqual(cells.slice(1, 3), [String(normal[field]), String(quick[field])], name)
    }
  })
})
