// The soak's report: per-kind traffic table, memory over the run, log lines, and the PASS/FAIL verdict.

import type { Memory } from './processes.js'
import { log, markdownTable, warn } from './report.js'
import type { AutocannonResult } from './soak-autocannon.js'
import type { Inside } from './soak-memory.js'
import { RSS_GROWTH_TARGET_PCT, type Settings, SMOOTHING_WINDOW_S } from './soak-settings.js'
import type { Kind, Phase, Tally } from './soak-traffic.js'
import { percentile } from './stats.js'

/** Everything the soak measured, for the report. */
export interface Figures {
  settings: Settings
  /** The service's PID. */
  pid: number | undefined
  kinds: Kind[]
  tallies: Map<string, Record<Phase, Tally>>
  result: AutocannonResult
  measuredS: number
  memory: Record<'atStart' | 'afterSeeding' | 'afterWarmup' | 'atEnd', Memory | undefined>
  inside: { afterWarmup: Inside | undefined; atEnd: Inside | undefined }
  databaseFiles: { database: number; wal: number } | undefined
  samples: Array<{ t: number; rssKiB: number }>
  smoothed: { afterWarmup: number; atEnd: number }
  serviceLog: string
  died: string | undefined
}

/** Prints the traffic, memory and log tables and the PASS/FAIL line; sets exit code 1 on FAIL. */
export function report(figures: Figures): void {
  const { kinds, tallies, result, measuredS, memory, samples } = figures
  const measured = (name: string) => tallies.get(name)?.measured ?? { statuses: new Map<number, number>(), latencies: [] }
  const warmup = (name: string) => tallies.get(name)?.warmup ?? { statuses: new Map<number, number>(), latencies: [] }
  const count = (tally: Tally) => [...tally.statuses.values()].reduce((sum, each) => sum + each, 0)
  const unexpectedIn = (tally: Tally, kind: Kind) =>
    [...tally.statuses].filter(([status]) => status !== kind.expectedStatus).reduce((sum, [, each]) => sum + each, 0)
  const statusList = (statuses: Map<number, number>) =>
    [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, each]) => `${status}×${each}`)
      .join(', ') || '-'

  let all: number[] = []
  const rows = kinds.map((kind) => {
    const tally = measured(kind.name)
    const sorted = [...tally.latencies].sort((a, b) => a - b)
    // concat, not push(...sorted): hundreds of thousands of arguments overflow the stack.
    all = all.concat(sorted)
    return [
      kind.name,
      `${kind.slots}%`,
      String(kind.expectedStatus),
      String(count(tally)),
      statusList(tally.statuses),
      String(unexpectedIn(tally, kind)),
      ms(percentile(sorted, 50)),
      ms(percentile(sorted, 99)),
      ms(sorted.at(-1)),
    ]
  })
  all.sort((a, b) => a - b)
  const total = kinds.reduce((sum, kind) => sum + count(measured(kind.name)), 0)
  const totalStatuses = new Map<number, number>()
  for (const kind of kinds) {
    for (const [status, each] of measured(kind.name).statuses) totalStatuses.set(status, (totalStatuses.get(status) ?? 0) + each)
  }
  const unexpected = kinds.reduce((sum, kind) => sum + unexpectedIn(measured(kind.name), kind), 0)
  const unexpectedWarmup = kinds.reduce((sum, kind) => sum + unexpectedIn(warmup(kind.name), kind), 0)
  const warmupTotal = kinds.reduce((sum, kind) => sum + count(warmup(kind.name)), 0)
  rows.push([
    '**all**',
    '100%',
    '',
    String(total),
    statusList(totalStatuses),
    String(unexpected),
    ms(percentile(all, 50)),
    ms(percentile(all, 99)),
    ms(all.at(-1)),
  ])

  log(`\n## Traffic: ${measuredS.toFixed(1)} s measured after the warm-up\n`)
  log(
    markdownTable(
      ['request kind', 'share', 'expected', 'requests', 'statuses', 'unexpected', 'p50 ms', 'p99 ms', 'max ms'],
      rows,
    ),
  )
  log(`\ntotal requests ${total} in ${measuredS.toFixed(1)} s: ${Math.round(total / measuredS)} req/s`)
  log(`counts by status: ${statusList(totalStatuses)}`)
  log(
    `UNEXPECTED statuses: ${unexpected} measured, ${unexpectedWarmup} during the warm-up (${warmupTotal} requests); ` +
      `socket errors ${result.errors}, timeouts ${result.timeouts} (whole run)`,
  )
  // autocannon's own count per status, over the whole run (warm-up included), as a cross-check of the tallies.
  const autocannonTotal = Object.values(result.statusCodeStats).reduce((sum, each) => sum + each.count, 0)
  if (autocannonTotal !== total + warmupTotal) {
    warn(`autocannon counted ${autocannonTotal} responses, the per-kind tallies ${total + warmupTotal}`)
  }

  const rss = (each: Memory | undefined) => each?.rssKiB
  const peak = samples.reduce<{ t: number; rssKiB: number } | undefined>(
    (max, each) => (max && max.rssKiB >= each.rssKiB ? max : each),
    undefined,
  )
  const maxSampled = peak?.rssKiB ?? Number.NaN
  const growth = percentChange(rss(memory.afterWarmup), rss(memory.atEnd))
  const smoothedGrowth = percentChange(figures.smoothed.afterWarmup, figures.smoothed.atEnd)
  log(`\n## Service memory (VmRSS from /proc/${figures.pid}/status, sampled every second: ${samples.length} samples)\n`)
  log(
    markdownTable(
      ['point', 'RSS MiB'],
      [
        ['start (ready, before seeding)', mib(rss(memory.atStart))],
        ['after seeding', mib(rss(memory.afterSeeding))],
        ['after warm-up', mib(rss(memory.afterWarmup))],
        ['end of load', mib(rss(memory.atEnd))],
        [`max sampled (at ${peak ? Math.round(peak.t) : '?'} s)`, mib(maxSampled)],
        ['VmHWM (kernel peak) at the end', mib(memory.atEnd?.hwmKiB)],
      ],
    ),
  )
  const met = growth !== undefined && growth < RSS_GROWTH_TARGET_PCT
  log(
    `\nRSS growth after warm-up → end: ${signed(growth)} (target < ${RSS_GROWTH_TARGET_PCT}%: ${met ? 'met' : 'NOT MET'}); ` +
      `medians of ${SMOOTHING_WINDOW_S} s windows: ${mib(figures.smoothed.afterWarmup)} → ${mib(figures.smoothed.atEnd)} MiB (${signed(smoothedGrowth)})`,
  )
  const { afterWarmup, atEnd } = figures.inside
  const breakdown = (label: string, key: keyof Inside) => [
    label,
    mibBytes(afterWarmup?.[key]),
    mibBytes(atEnd?.[key]),
    signedMib(afterWarmup?.[key], atEnd?.[key]),
  ]
  log('\nWhere the memory is (GET /metrics and /proc/PID/status):\n')
  log(
    markdownTable(
      ['MiB', 'after warm-up', 'end', 'change'],
      [
        breakdown('RssAnon (heap, malloc)', 'rssAnon'),
        breakdown('RssFile (mapped files: code, SQLite -shm)', 'rssFile'),
        breakdown('RssShmem (shared memory)', 'rssShmem'),
        breakdown('V8 heap used', 'heapUsed'),
        breakdown('V8 heap total (reserved by V8)', 'heapTotal'),
        breakdown('external (Buffers, native)', 'external'),
      ],
    ),
  )
  log(
    `\nservice event-loop delay, longest (nodejs_eventloop_lag_max_seconds): from start-up to the end of the warm-up ` +
      `${ms((afterWarmup?.loopDelayMax ?? Number.NaN) * 1000)} ms, measured phase ${ms((atEnd?.loopDelayMax ?? Number.NaN) * 1000)} ms`,
  )
  if (figures.databaseFiles) {
    log(
      `SQLite files at the end: database ${mibBytes(figures.databaseFiles.database)} MiB, ` +
        `WAL ${mibBytes(figures.databaseFiles.wal)} MiB`,
    )
  }
  const timeline = samples.filter((_, index) => index % 30 === 0 || index === samples.length - 1)
  log(`RSS every 30 s (s: MiB): ${timeline.map((each) => `${Math.round(each.t)}: ${mib(each.rssKiB)}`).join(', ')}`)

  const logged = figures.serviceLog.split('\n').filter((line) => /"level":(4|5|6)0/.test(line))
  const messages = new Map<string, number>()
  for (const line of logged) {
    const message = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 120)
    messages.set(message, (messages.get(message) ?? 0) + 1)
  }
  log(
    `service log lines at warn or above: ${logged.length}${
      logged.length ? ` (${[...messages].map(([message, each]) => `"${message}"×${each}`).join(', ')})` : ''
    }`,
  )

  const failures = [
    unexpected + unexpectedWarmup > 0 && `${unexpected + unexpectedWarmup} unexpected statuses`,
    result.errors + result.timeouts > 0 && `${result.errors} socket errors and ${result.timeouts} timeouts`,
    total === 0 && 'no responses at all',
    figures.died,
  ].filter((each): each is string => Boolean(each))
  log(`\nRESULT: ${failures.length === 0 ? 'PASS' : `FAIL (${failures.join('; ')})`}`)
  if (failures.length > 0) process.exitCode = 1
}

function percentChange(from: number | undefined, to: number | undefined): number | undefined {
  if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to) || from === 0) return undefined
  return ((to - from) / from) * 100
}

function signed(value: number | undefined): string {
  return value === undefined ? '?' : `${value >= 0 ? '+' : ''}${value.toFixed(1)}%`
}

function ms(value: number | undefined): string {
  return value === undefined || Number.isNaN(value) ? '-' : value.toFixed(2)
}

/** KiB → MiB with one decimal; `?` when unknown or zero. */
export function mib(kib: number | undefined): string {
  return kib === undefined || !Number.isFinite(kib) || kib === 0 ? '?' : (kib / 1024).toFixed(1)
}

function mibBytes(bytes: number | undefined): string {
  return bytes === undefined || !Number.isFinite(bytes) ? '?' : (bytes / 1024 / 1024).toFixed(1)
}

function signedMib(from: number | undefined, to: number | undefined): string {
  if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to)) return '?'
  const change = (to - from) / 1024 / 1024
  return `${change >= 0 ? '+' : ''}${change.toFixed(1)}`
}
