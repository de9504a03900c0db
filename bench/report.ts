// The bench's report, all of it: the run's header (command, machine, versions), the figures per database with the
// service's ratios to every other process, the comparison with the previous release, and every target of
// docs/benchmarks.md with its measured value and verdict.
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
  PREVIOUS_CPU_RATIO,
  PROCESS_NAMES,
  PROCESSES,
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
    `servers on node ${nodeVersion} (${node}); ${['fastify', 'express', 'better-sqlite3', 'pg', 'kysely', 'pino'].map(version).join(', ')}`,
  )
  log(
    `commit ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'src') ? ' with uncommitted changes in src/' : ''}`,
  )
  log(
    `load: ${wrk}, 1 thread, keep-alive connections; ${pinned ? 'servers pinned to CPU 0, wrk to CPU 1 (taskset)' : 'NOT pinned (no taskset or < 2 CPUs)'}`,
  )
}

/** What a ratio compares: requests per second, the server's CPU per request, or PostgreSQL's CPU per request. */
type Metric = (each: Measurement) => number
const reqPerSec: Metric = (each) => each.reqPerSec
const cpu: Metric = (each) => each.cpuUs ?? Number.NaN
const databaseCpu: Metric = (each) => each.databaseCpuUs ?? Number.NaN
/** The inverse of CPU per request: a req/s ratio as it would be if both were bound by their one core alone. */
const perCpu: Metric = (each) => 1 / cpu(each)

const roundsOf = (results: Results, database: Database, scenario: Scenario, process: Process) =>
  results.rounds.get(`${database}/${scenario.id}/${process}`) ?? []

/** The median over rounds of the service's `metric` divided by `over`'s in the same round; NaN when either did not run. */
function pairedRatio(results: Results, database: Database, scenario: Scenario, over: Process, metric: Metric): number {
  const reference = roundsOf(results, database, scenario, over)
  return median(
    roundsOf(results, database, scenario, 'service').map(
      (each, round) => metric(each) / (reference[round] ? metric(reference[round]) : Number.NaN),
    ),
  )
}

/** The median of `metric` over the rounds of one process; NaN when it did not run. */
function medianOf(results: Results, database: Database, scenario: Scenario, process: Process, metric: Metric): number {
  return median(roundsOf(results, database, scenario, process).map(metric))
}

/** The unexpected answers of a scenario over every round and process, or ''. */
function problems(results: Results, database: Database, scenario: Scenario): string {
  const found = (scenario.on[database]?.processes ?? []).flatMap((process) =>
    roundsOf(results, database, scenario, process)
      .filter((each) => each.problems)
      .map((each) => `${PROCESS_NAMES[process]}: ${each.problems}`),
  )
  return [...new Set(found)].join('; ')
}

/**
 * Prints the figures of one database: per scenario and process the medians (req/s, latency, CPU per request, and on
 * PostgreSQL the database's CPU per request) with the service's ratio to each; then the ratios alone, p99 at half
 * rate, and peak RSS.
 */
export function printFigures(results: Results, database: Database, rounds: number): void {
  const scenarios = SCENARIOS.filter((each) => roundsOf(results, database, each, 'service').length > 0)
  const onPostgres = database === 'postgres'
  const others = PROCESSES.filter((process) => process !== 'service' && scenarios.some((each) => ran(each, process)))
  function ran(scenario: Scenario, process: Process): boolean {
    return roundsOf(results, database, scenario, process).length > 0
  }
  const ratio = (scenario: Scenario, process: Process, metric: Metric) =>
    process === 'service' || !ran(scenario, process) ? '—' : fixed(pairedRatio(results, database, scenario, process, metric))
  log(`\n### ${DATABASE_NAMES[database]}: medians of ${rounds} rounds (ratios: median of per-round ratios)\n`)
  log(
    table(
      [
        'scenario',
        'process',
        'req/s',
        'p50 ms',
        'p99 ms',
        'CPU µs/req',
        ...(onPostgres ? ['PostgreSQL µs/req'] : []),
        'service req/s ÷ this',
        'service CPU ÷ this',
        ...(onPostgres ? ['service PostgreSQL CPU ÷ this'] : []),
      ],
      scenarios.flatMap((scenario) =>
        PROCESSES.filter((process) => ran(scenario, process)).map((process) => {
          const of = (metric: Metric, digits: number) => fixed(medianOf(results, database, scenario, process, metric), digits)
          return [
            `(${scenario.id}) ${scenario.title}`,
            PROCESS_NAMES[process],
            of(reqPerSec, 0),
            of((each) => each.p50Ms, 2),
            of((each) => each.p99Ms, 2),
            of(cpu, 1),
            ...(onPostgres ? [of(databaseCpu, 1)] : []),
            ratio(scenario, process, reqPerSec),
            ratio(scenario, process, cpu),
            ...(onPostgres ? [ratio(scenario, process, databaseCpu)] : []),
          ]
        }),
      ),
    ),
  )
  const trouble = scenarios.map((each) => [each, problems(results, database, each)] as const).filter(([, text]) => text)
  for (const [scenario, text] of trouble) log(`\nUNEXPECTED answers in (${scenario.id}) ${scenario.title}: ${text}`)
  log(`\nThe service ÷ each other process, ${DATABASE_NAMES[database]}: req/s (CPU per request)\n`)
  log(
    table(
      ['scenario', ...others.map((process) => PROCESS_NAMES[process])],
      scenarios.map((scenario) => [
        `(${scenario.id}) ${scenario.title}`,
        ...others.map((process) =>
          ran(scenario, process) ? `${ratio(scenario, process, reqPerSec)} (${ratio(scenario, process, cpu)})` : '—',
        ),
      ]),
    ),
  )
  if (onPostgres) {
    log(`\nPostgreSQL's CPU per request (µs), the service's / each other process's (ratio)\n`)
    log(
      table(
        ['scenario', ...others.map((process) => PROCESS_NAMES[process])],
        scenarios.map((scenario) => [
          `(${scenario.id}) ${scenario.title}`,
          ...others.map((process) =>
            ran(scenario, process)
              ? `${fixed(medianOf(results, database, scenario, 'service', databaseCpu), 0)} / ` +
                `${fixed(medianOf(results, database, scenario, process, databaseCpu), 0)} (${ratio(scenario, process, databaseCpu)})`
              : '—',
          ),
        ]),
      ),
    )
  }
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
  const peaks = PROCESSES.filter((each) => results.peakKiB.has(`${database}/${each}`))
  log(
    `\nPeak RSS (VmHWM), ${DATABASE_NAMES[database]}: ${peaks.map((each) => `${PROCESS_NAMES[each]} ${fixed(megabytes(results, database, each), 1)} MB`).join(', ')}`,
  )
}

function megabytes(results: Results, database: Database, process: Process): number {
  return ((results.peakKiB.get(`${database}/${process}`) ?? Number.NaN) * 1024) / 1e6
}

/**
 * PostgreSQL's CPU per request (µs) below which a scenario gives it no work to compare (the 401): there, one 10 ms tick
 * of a background process over a run would read as a large ratio.
 */
const DATABASE_CPU_FLOOR_US = 5

/**
 * This release over the previous one per scenario and database (median of per-round ratios): req/s, the service's CPU
 * per request, PostgreSQL's (NaN where it did less than DATABASE_CPU_FLOOR_US for the previous release) and the sum of
 * both; `worst` is the larger of the service's and PostgreSQL's.
 */
function previousRatios(results: Results) {
  return DATABASES.flatMap((database) =>
    SCENARIOS.filter((scenario) => roundsOf(results, database, scenario, 'previous').length > 0).map((scenario) => {
      const ratio = (metric: Metric) => pairedRatio(results, database, scenario, 'previous', metric)
      const worked = medianOf(results, database, scenario, 'previous', databaseCpu) >= DATABASE_CPU_FLOOR_US
      const ratios = {
        reqPerSec: ratio(reqPerSec),
        cpu: ratio(cpu),
        databaseCpu: worked ? ratio(databaseCpu) : Number.NaN,
        total: ratio((each) => cpu(each) + (each.databaseCpuUs ?? 0)),
      }
      const worst = Math.max(ratios.cpu, Number.isFinite(ratios.databaseCpu) ? ratios.databaseCpu : 0)
      return { database, scenario, ...ratios, worst, trouble: problems(results, database, scenario) }
    }),
  )
}

/**
 * Prints this release against the previous one (`revision`), per scenario and database, and a line for each scenario
 * where this release costs more than PREVIOUS_CPU_RATIO × the previous release's CPU per request (its own, or
 * PostgreSQL's). Returns how many were flagged.
 */
export function printPrevious(results: Results, revision: string): number {
  const rows = previousRatios(results)
  if (rows.length === 0) return 0
  const costlier = (row: (typeof rows)[number]) => row.worst > PREVIOUS_CPU_RATIO
  log(`\n## This release ÷ the previous release (${revision}), median of per-round ratios\n`)
  log(
    table(
      ['scenario', 'database', 'req/s', 'CPU per request', 'PostgreSQL CPU per request', 'both', 'verdict'],
      rows.map((row) => [
        `(${row.scenario.id}) ${row.scenario.title}`,
        DATABASE_NAMES[row.database],
        fixed(row.reqPerSec),
        fixed(row.cpu),
        fixed(row.databaseCpu),
        fixed(row.total),
        costlier(row) ? `**more than ${percent(PREVIOUS_CPU_RATIO)} more CPU**` : 'ok',
      ]),
    ),
  )
  const flagged = rows.filter(costlier)
  if (flagged.length > 0) log('')
  for (const row of flagged) {
    log(
      `FLAGGED: (${row.scenario.id}) ${row.scenario.title} on ${DATABASE_NAMES[row.database]}: this release costs ` +
        `${fixed(row.cpu)} × the previous release's CPU per request` +
        `${Number.isFinite(row.databaseCpu) ? `, PostgreSQL ${fixed(row.databaseCpu)} × its CPU for it` : ''}`,
    )
  }
  return flagged.length
}

const percent = (ratio: number) => `${Math.round((ratio - 1) * 100)} %`

/** One target: what it judges, its threshold as docs/benchmarks.md states it, and how to measure it from the results. */
export interface Target {
  what: string
  threshold: string
  /** The measured value as text (`—` when not run), the verdict, and for a ratio the same ratio by CPU time. */
  judge(results: Results): { value: string; verdict: 'met' | '**missed**' | 'not run' | 'invalid'; byCpu?: string }
}

const verdictOf = (value: number, met: boolean, trouble: string) =>
  !Number.isFinite(value) ? 'not run' : trouble ? 'invalid' : met ? 'met' : '**missed**'

/**
 * Every target, in the order of docs/benchmarks.md: req/s ratios per database and scenario, PostgreSQL's CPU per
 * request, p99 at half rate, peak RSS, and CPU per request against the previous release.
 */
export function targets(): Target[] {
  const list: Target[] = []
  const ratioTarget = (database: Database, scenario: Scenario, ratio: Ratio): Target => ({
    what: `(${scenario.id}) ${scenario.title}, ${DATABASE_NAMES[database]}`,
    threshold: describeRatio(ratio),
    judge: (results) => {
      const value = pairedRatio(results, database, scenario, ratio.over, reqPerSec)
      return {
        value: fixed(value),
        verdict: verdictOf(value, value >= ratio.min, problems(results, database, scenario)),
        byCpu: fixed(pairedRatio(results, database, scenario, ratio.over, perCpu)),
      }
    },
  })
  for (const database of DATABASES) {
    for (const scenario of SCENARIOS)
      for (const ratio of scenario.on[database]?.targets ?? []) list.push(ratioTarget(database, scenario, ratio))
  }
  for (const scenario of SCENARIOS) {
    const target = scenario.on.postgres?.databaseCpu
    if (target === undefined) continue
    list.push({
      what: `PostgreSQL CPU per request, (${scenario.id}) ${scenario.title}`,
      threshold: `≤ ${target.max.toFixed(2)} × ${PROCESS_NAMES[target.over]}'s`,
      judge: (results) => {
        const value = pairedRatio(results, 'postgres', scenario, target.over, databaseCpu)
        const [ours, theirs] = [
          medianOf(results, 'postgres', scenario, 'service', databaseCpu),
          medianOf(results, 'postgres', scenario, target.over, databaseCpu),
        ]
        return {
          value: Number.isFinite(value) ? `${fixed(value)} (${fixed(ours, 0)} / ${fixed(theirs, 0)} µs)` : '—',
          verdict: verdictOf(value, value <= target.max, problems(results, 'postgres', scenario)),
        }
      },
    })
  }
  for (const database of DATABASES) {
    for (const scenario of SCENARIOS.filter((each) => each.halfRate && each.on[database])) {
      list.push({
        what: `p99 at half the saturated rate, (${scenario.id}) ${scenario.title}, ${DATABASE_NAMES[database]}`,
        threshold: `≤ ${HALF_RATE_P99_MS} ms`,
        judge: (results) => {
          const run = results.halfRate.get(`${database}/${scenario.id}`)
          const value = run?.measured.p99Ms ?? Number.NaN
          return {
            value: Number.isFinite(value) ? `${fixed(value)} ms` : '—',
            verdict: verdictOf(value, value <= HALF_RATE_P99_MS, run?.measured.problems ?? ''),
          }
        },
      })
    }
  }
  for (const database of DATABASES) {
    list.push({
      what: `peak RSS, ${DATABASE_NAMES[database]}`,
      threshold: `≤ ${PEAK_RSS_RATIO.toFixed(2)} × minimal Fastify's`,
      judge: (results) => {
        const [service, minimal] = [megabytes(results, database, 'service'), megabytes(results, database, 'minimal-fastify')]
        const value = service / minimal
        const detail = Number.isFinite(value) ? `${fixed(value)} (${fixed(service, 1)} / ${fixed(minimal, 1)} MB)` : '—'
        return { value: detail, verdict: verdictOf(value, value <= PEAK_RSS_RATIO, '') }
      },
    })
  }
  list.push({
    what: "CPU per request (the service's, and PostgreSQL's for it), every scenario and database",
    threshold: `≤ ${PREVIOUS_CPU_RATIO.toFixed(2)} × previous release's`,
    judge: (results) => {
      const rows = previousRatios(results).filter((row) => Number.isFinite(row.worst))
      const worst = rows.reduce<(typeof rows)[number] | undefined>(
        (top, row) => (top && top.worst >= row.worst ? top : row),
        undefined,
      )
      if (worst === undefined) return { value: '—', verdict: 'not run' }
      return {
        value: `${fixed(worst.worst)} at most ((${worst.scenario.id}) ${worst.scenario.title}, ${DATABASE_NAMES[worst.database]})`,
        verdict: verdictOf(worst.worst, worst.worst <= PREVIOUS_CPU_RATIO, rows.map((row) => row.trouble).join('')),
      }
    },
  })
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
