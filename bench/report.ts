// The bench's report, all of it: the run's header (command, machine, versions), the figures per database, and every
// target of docs/benchmarks.md with its measured value and verdict.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem } from 'node:os'
import { join } from 'node:path'
import {
  DATABASES,
  type Database,
  describeRatio,
  HALF_RATE_P99_MS,
  PEAK_RSS_RATIO,
  type Process,
  type Ratio,
  SCENARIOS,
  type Scenario,
} from './scenarios.js'
import type { Measurement } from './wrk.js'

/** Everything one bench run measured. */
export interface Results {
  /** Saturated runs by `database/scenario/process`, one per round. */
  rounds: Map<string, Measurement[]>
  /** The service at half its saturated rate, by `database/scenario`. */
  halfRate: Map<string, { offered: number; measured: Measurement }>
  /** Peak RSS (VmHWM, KiB) by `database/process`. */
  peakKiB: Map<string, number>
}

const NAMES: Record<Process, string> = { service: 'service', fastify: 'minimal Fastify', bare: 'bare node:http' }
const DATABASE_NAMES: Record<Database, string> = { sqlite: 'SQLite', postgres: 'PostgreSQL' }

/** Prints one line to stdout. */
export function log(line = ''): void {
  process.stdout.write(`${line}\n`)
}

/** The median of `values` (mean of the middle two); NaN when empty. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2
}

const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : '—')
const integer = (value: number) => fixed(value, 0)
const table = (header: string[], rows: string[][]) =>
  [header, header.map((_, i) => (i === 0 ? ':--' : '--:')), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n')

/** Prints the command, machine, Node.js and dependency versions, the commit, the generator and the pinning. */
export function printHeader(root: string, node: string, command: string, wrk: string, pinned: boolean): void {
  const version = (name: string) => {
    try {
      return `${name} ${JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version}`
    } catch {
      return `${name} ?`
    }
  }
  const git = (...args: string[]) => spawnSync('git', args, { cwd: root, encoding: 'utf8' }).stdout?.trim() ?? '?'
  const nodeVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()
  log(`# Animal Store bench, ${new Date().toISOString()}`)
  log(`command: ${command}`)
  log(
    `machine: ${cpus().length} × ${cpus()[0]?.model}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()}, load average ${loadavg()[0]?.toFixed(2)}`,
  )
  log(
    `servers on node ${nodeVersion} (${node}); ${['fastify', 'better-sqlite3', 'pg', 'kysely', 'pino'].map(version).join(', ')}`,
  )
  log(
    `commit ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'src') ? ' with uncommitted changes in src/' : ''}`,
  )
  log(
    `load: ${wrk}, 1 thread, keep-alive connections; ${pinned ? 'servers pinned to CPU 0, wrk to CPU 1 (taskset)' : 'NOT pinned (no taskset or < 2 CPUs)'}`,
  )
}

/**
 * The median over rounds of the service's req/s divided by `over`'s in the same round; `byCpu`: of `over`'s CPU time
 * per request divided by the service's (what the req/s ratio would be if both were bound by their one core alone).
 */
function pairedRatio(results: Results, database: Database, scenario: Scenario, over: Process, byCpu = false): number {
  const of = (process: Process) => results.rounds.get(`${database}/${scenario.id}/${process}`) ?? []
  const reference = of(over)
  return median(
    of('service').map((each, round) =>
      byCpu
        ? (reference[round]?.cpuUs ?? Number.NaN) / (each.cpuUs ?? Number.NaN)
        : each.reqPerSec / (reference[round]?.reqPerSec ?? Number.NaN),
    ),
  )
}

/** The unexpected answers of a scenario over every round and process, or ''. */
function problems(results: Results, database: Database, scenario: Scenario): string {
  const found = (scenario.on[database]?.processes ?? []).flatMap((process) =>
    (results.rounds.get(`${database}/${scenario.id}/${process}`) ?? [])
      .filter((each) => each.problems)
      .map((each) => `${NAMES[process]}: ${each.problems}`),
  )
  return [...new Set(found)].join('; ')
}

/** Prints the figures of one database: medians per scenario and process, ratios, p99 at half rate, peak RSS. */
export function printFigures(results: Results, database: Database, rounds: number): void {
  const scenarios = SCENARIOS.filter((each) => results.rounds.has(`${database}/${each.id}/service`))
  const cell = (scenario: Scenario, process: Process, pick: (each: Measurement) => number, format = integer) => {
    const list = results.rounds.get(`${database}/${scenario.id}/${process}`)
    return list ? format(median(list.map(pick))) : '—'
  }
  const ratio = (scenario: Scenario, over: Process) =>
    results.rounds.has(`${database}/${scenario.id}/${over}`) ? fixed(pairedRatio(results, database, scenario, over)) : '—'
  log(`\n### ${DATABASE_NAMES[database]}: medians of ${rounds} rounds (ratios: median of per-round ratios)\n`)
  log(
    table(
      [
        'scenario',
        'service req/s',
        'p50 ms',
        'p99 ms',
        'minimal Fastify req/s',
        'bare node:http req/s',
        'service / Fastify',
        'service / bare',
        'CPU µs/req: service',
        'Fastify',
        'bare',
        'unexpected',
      ],
      scenarios.map((each) => [
        `(${each.id}) ${each.title}`,
        cell(each, 'service', (m) => m.reqPerSec),
        cell(each, 'service', (m) => m.p50Ms, fixed),
        cell(each, 'service', (m) => m.p99Ms, fixed),
        cell(each, 'fastify', (m) => m.reqPerSec),
        cell(each, 'bare', (m) => m.reqPerSec),
        ratio(each, 'fastify'),
        ratio(each, 'bare'),
        cell(
          each,
          'service',
          (m) => m.cpuUs ?? Number.NaN,
          (v) => fixed(v, 1),
        ),
        cell(
          each,
          'fastify',
          (m) => m.cpuUs ?? Number.NaN,
          (v) => fixed(v, 1),
        ),
        cell(
          each,
          'bare',
          (m) => m.cpuUs ?? Number.NaN,
          (v) => fixed(v, 1),
        ),
        problems(results, database, each) || 'none',
      ]),
    ),
  )
  const half = scenarios.filter((each) => results.halfRate.has(`${database}/${each.id}`))
  if (half.length > 0) {
    log(`\nThe service at half its saturated rate (${DATABASE_NAMES[database]}):\n`)
    log(
      table(
        ['scenario', 'offered req/s', 'achieved req/s', 'p50 ms', 'p99 ms', 'unexpected'],
        half.map((each) => {
          const { offered, measured } = results.halfRate.get(`${database}/${each.id}`) as {
            offered: number
            measured: Measurement
          }
          return [
            `(${each.id}) ${each.title}`,
            integer(offered),
            integer(measured.reqPerSec),
            fixed(measured.p50Ms),
            fixed(measured.p99Ms),
            measured.problems || 'none',
          ]
        }),
      ),
    )
  }
  const peaks = (['service', 'fastify', 'bare'] as const).filter((each) => results.peakKiB.has(`${database}/${each}`))
  log(
    `\nPeak RSS (VmHWM), ${DATABASE_NAMES[database]}: ${peaks.map((each) => `${NAMES[each]} ${fixed(megabytes(results, database, each), 1)} MB`).join(', ')}`,
  )
}

function megabytes(results: Results, database: Database, process: Process): number {
  return ((results.peakKiB.get(`${database}/${process}`) ?? Number.NaN) * 1024) / 1e6
}

/** One target: what it judges, its threshold as docs/benchmarks.md states it, and how to measure it from the results. */
export interface Target {
  what: string
  threshold: string
  /** The measured value as text (`—` when not run), the verdict, and for a ratio the same ratio by CPU time. */
  judge(results: Results): { value: string; verdict: 'met' | '**missed**' | 'not run' | 'invalid'; byCpu?: string }
}

const verdictOf = (value: number, met: boolean, trouble: string) =>
  !Number.isFinite(value) ? 'not run' : trouble ? 'invalid' : met ? 'met' : '**missed**'

/** Every target, in the order of docs/benchmarks.md: ratios per scenario and database, p99 at half rate, peak RSS. */
export function targets(): Target[] {
  const list: Target[] = []
  const ratioTarget = (database: Database, scenario: Scenario, ratio: Ratio): Target => ({
    what: `(${scenario.id}) ${scenario.title}, ${DATABASE_NAMES[database]}`,
    threshold: describeRatio(ratio),
    judge: (results) => {
      const value = pairedRatio(results, database, scenario, ratio.over)
      return {
        value: fixed(value),
        verdict: verdictOf(value, value >= ratio.min, problems(results, database, scenario)),
        byCpu: fixed(pairedRatio(results, database, scenario, ratio.over, true)),
      }
    },
  })
  for (const database of DATABASES) {
    for (const scenario of SCENARIOS)
      for (const ratio of scenario.on[database]?.targets ?? []) list.push(ratioTarget(database, scenario, ratio))
  }
  for (const scenario of SCENARIOS.filter((each) => each.halfRate)) {
    list.push({
      what: `p99 at half the saturated rate, (${scenario.id}) ${scenario.title}, SQLite`,
      threshold: `≤ ${HALF_RATE_P99_MS} ms`,
      judge: (results) => {
        const run = results.halfRate.get(`sqlite/${scenario.id}`)
        const value = run?.measured.p99Ms ?? Number.NaN
        return {
          value: Number.isFinite(value) ? `${fixed(value)} ms` : '—',
          verdict: verdictOf(value, value <= HALF_RATE_P99_MS, run?.measured.problems ?? ''),
        }
      },
    })
  }
  for (const database of DATABASES) {
    list.push({
      what: `peak RSS, ${DATABASE_NAMES[database]}`,
      threshold: `≤ ${PEAK_RSS_RATIO.toFixed(2)} × minimal Fastify's`,
      judge: (results) => {
        const value = megabytes(results, database, 'service') / megabytes(results, database, 'fastify')
        const detail = Number.isFinite(value)
          ? `${fixed(value)} (${fixed(megabytes(results, database, 'service'), 1)} / ${fixed(megabytes(results, database, 'fastify'), 1)} MB)`
          : '—'
        return { value: detail, verdict: verdictOf(value, value <= PEAK_RSS_RATIO, '') }
      },
    })
  }
  return list
}

/** Prints every target with its measured value and verdict; returns how many were missed. */
export function printTargets(results: Results): number {
  const rows = targets().map((target) => ({ target, ...target.judge(results) }))
  log('\n## Targets\n')
  log(
    table(
      ['target', 'threshold', 'measured', 'verdict', 'by CPU time'],
      rows.map((row) => [row.target.what, row.target.threshold, row.value, row.verdict, row.byCpu ?? '—']),
    ),
  )
  return rows.filter((row) => row.verdict === '**missed**').length
}
