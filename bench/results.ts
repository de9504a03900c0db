// The bench's results: per-scenario medians and ratios from the measured rounds, judged against their targets,
// and the tables printed for each database.
import { integer, markdownTable } from './report.js'
import { FIXED_RATE_P99_MS, PEAK_RSS_MB, type Scenario, type Target, type TargetName } from './scenarios.js'
import type { Database } from './settings.js'
import { median } from './stats.js'
import { type Measurement, problems, type Workload } from './workload.js'

/** Measured rounds by `scenario/target`, index = round. */
export type Runs = Map<string, Measurement[]>

/** Medians of one scenario on one target. */
interface Figures {
  reqPerSec: number
  p50Ms: number
  p99Ms: number
}

/** One row of a database's results table. */
export interface ResultRow {
  scenario: string
  service: Figures
  /** What the service is divided by in the ratio column: the baseline, or for (f) the service on 10k rows. */
  reference: { label: string; figures: Figures; ratio: number } | undefined
  /** The minimal Fastify app on the same driver, when measured. */
  fastify: { reqPerSec: number; ratio: number } | undefined
  target: Target | undefined
  /** The ratio the target judges (median of per-round ratios), NaN when there is no target. */
  judged: number
  /** Unexpected statuses and socket errors over every round; empty when none. */
  problems: string
}

const LABELS: Record<TargetName, string> = {
  service: 'service',
  'service-1m': 'service on 1M rows',
  baseline: 'node:http baseline',
  reference: 'minimal Fastify',
}

/** `service` → `service on 1M rows` etc. */
export function label(name: TargetName): string {
  return LABELS[name]
}

function figures(list: Measurement[]): Figures {
  return {
    reqPerSec: median(list.map((each) => each.reqPerSec)),
    p50Ms: median(list.map((each) => each.p50Ms)),
    p99Ms: median(list.map((each) => each.p99Ms)),
  }
}

/** The median over rounds of `a`'s req/s divided by `b`'s in the same round. */
function pairedRatio(a: Measurement[], b: Measurement[]): number {
  return median(a.map((each, round) => each.reqPerSec / (b[round]?.reqPerSec ?? Number.NaN)))
}

/** The row of `scenario` on `database` from `runs`. */
export function resultRow(scenario: Scenario, database: Database, workload: Workload, runs: Runs): ResultRow {
  const on = scenario.on[database]
  const of = (name: TargetName) => runs.get(`${scenario.id}/${name}`) ?? []
  const primary: TargetName = on?.targets.includes('service-1m') ? 'service-1m' : 'service'
  const referenceName: TargetName | undefined =
    primary === 'service-1m' ? 'service' : on?.targets.includes('baseline') ? 'baseline' : undefined
  const trouble = (on?.targets ?? [])
    .flatMap((name) => of(name).map((each) => problems(workload, each) && `${label(name)}: ${problems(workload, each)}`))
    .filter(Boolean)
  const target = on?.target
  return {
    scenario: `(${scenario.id}) ${scenario.title}`,
    service: figures(of(primary)),
    reference: referenceName && {
      label: referenceName === 'service' ? 'service, 10k rows' : 'baseline',
      figures: figures(of(referenceName)),
      ratio: pairedRatio(of(primary), of(referenceName)),
    },
    fastify: on?.targets.includes('reference')
      ? { reqPerSec: figures(of('reference')).reqPerSec, ratio: pairedRatio(of('service'), of('reference')) }
      : undefined,
    target,
    judged: target ? pairedRatio(of(target.numerator), of(target.denominator)) : Number.NaN,
    problems: [...new Set(trouble)].join('; '),
  }
}

/** `≥ 0.40 × baseline`: a target as the results table and docs/benchmarks.md state it. */
export function describeTarget(target: Target): string {
  const against: Record<TargetName, string> = {
    service: 'service on 10k rows',
    'service-1m': 'service on 1M rows',
    baseline: 'baseline',
    reference: 'minimal Fastify',
  }
  return `≥ ${target.min.toFixed(2)} × ${against[target.denominator]}`
}

function verdict(met: boolean | undefined): string {
  return met === undefined ? '—' : met ? 'met' : '**missed**'
}

/** The results table of one database. */
export function resultsTable(rows: ResultRow[]): string {
  return markdownTable(
    [
      'scenario',
      'service req/s',
      'service p50 ms',
      'service p99 ms',
      'baseline req/s',
      'service / baseline',
      'minimal Fastify req/s',
      'service / Fastify',
      'target',
      'measured',
      'target met',
      'unexpected',
    ],
    rows.map((row) => [
      row.scenario,
      integer(row.service.reqPerSec),
      row.service.p50Ms.toFixed(2),
      row.service.p99Ms.toFixed(2),
      row.reference
        ? `${integer(row.reference.figures.reqPerSec)}${row.reference.label === 'baseline' ? '' : ` (${row.reference.label})`}`
        : '—',
      row.reference ? row.reference.ratio.toFixed(2) : '—',
      row.fastify ? integer(row.fastify.reqPerSec) : '—',
      row.fastify ? row.fastify.ratio.toFixed(2) : '—',
      row.target ? describeTarget(row.target) : '—',
      row.target ? row.judged.toFixed(2) : '—',
      row.problems ? 'invalid' : verdict(row.target ? row.judged >= row.target.min : undefined),
      row.problems || 'none',
    ]),
  )
}

/** One fixed-rate run: p99 at an offered rate of half the service's saturated throughput. */
export interface FixedRateRow {
  scenario: string
  offeredPerSec: number
  measured: Measurement
  problems: string
}

/** The fixed-rate table. */
export function fixedRateTable(rows: FixedRateRow[]): string {
  return markdownTable(
    ['scenario', 'offered req/s', 'achieved req/s', 'p50 ms', 'p99 ms', 'target', 'target met', 'unexpected'],
    rows.map((row) => [
      row.scenario,
      integer(row.offeredPerSec),
      integer(row.measured.reqPerSec),
      row.measured.p50Ms.toFixed(2),
      row.measured.p99Ms.toFixed(2),
      `p99 ≤ ${FIXED_RATE_P99_MS} ms`,
      row.problems ? 'invalid' : verdict(row.measured.p99Ms <= FIXED_RATE_P99_MS),
      row.problems || 'none',
    ]),
  )
}

/** Peak memory of one process: VmHWM from /proc/PID/status, in KiB. */
export interface MemoryRow {
  process: string
  afterReadyKiB: number
  peakKiB: number
  /** Whether the service's target applies to this row. */
  judged: boolean
}

/** The memory table, in MB (10^6 bytes, the target's unit) and MiB. */
export function memoryTable(rows: MemoryRow[]): string {
  const mb = (kib: number) => (Number.isFinite(kib) ? ((kib * 1024) / 1e6).toFixed(1) : '?')
  const mib = (kib: number) => (Number.isFinite(kib) ? (kib / 1024).toFixed(1) : '?')
  return markdownTable(
    ['process', 'RSS after ready MB', 'peak RSS (VmHWM) MB', 'peak RSS MiB', 'target', 'target met'],
    rows.map((row) => [
      row.process,
      mb(row.afterReadyKiB),
      mb(row.peakKiB),
      mib(row.peakKiB),
      row.judged ? `≤ ${PEAK_RSS_MB} MB` : '—',
      verdict(row.judged ? (row.peakKiB * 1024) / 1e6 <= PEAK_RSS_MB : undefined),
    ]),
  )
}
