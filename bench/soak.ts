// The bench's long mode (`npm run soak`, `bench/run.ts --soak`): the service alone under the soak's mix for minutes,
// every answer's status checked against its request kind, its RSS sampled every second (docs/reliability.md).
import { readFileSync } from 'node:fs'
import type { BenchDatabase } from './databases.js'
import { readMemory } from './processes.js'
import { log, median } from './report.js'
import type { Run } from './run.js'
import { collectPools, type Database, preflight, soakKinds } from './scenarios.js'
import type { Measurement } from './wrk.js'

/** The most RSS may grow from the end of the warm-up to the end of the load, in percent. */
const RSS_GROWTH_TARGET_PCT = 10
/** Seconds of samples whose median is the RSS at a point (garbage collection makes single samples noisy). */
const WINDOW_S = 10

/** Runs the soak on `database`; prints traffic, memory and log figures and PASS/FAIL; resolves to true on FAIL. */
export async function soak(run: Run, database: Database, opened: BenchDatabase): Promise<boolean> {
  const { settings } = run
  log(
    `\n## Soak on ${database}: ${settings.connections} connections, ${settings.warmupS} s warm-up, ${settings.durationS} s measured`,
  )
  // Warnings only in the log: at info, minutes of load would write gigabytes of request lines.
  const service = await run.start('service', opened, { LOG_LEVEL: 'warn' })
  const kinds = soakKinds(await collectPools(service.origin))
  await preflight(service.origin, kinds)
  const startedAt = Date.now()
  const samples: { t: number; kib: number }[] = []
  const sample = () => {
    const kib = readMemory(service.pid)?.rssKiB
    if (kib !== undefined) samples.push({ t: (Date.now() - startedAt) / 1000, kib })
  }
  sample()
  const sampler = setInterval(sample, 1000)
  const progress = setInterval(
    () => log(`  ${Math.round((Date.now() - startedAt) / 1000)} s: RSS ${mib(samples.at(-1)?.kib)} MiB`),
    60_000,
  )
  let warmup: Measurement | undefined
  let measured: Measurement
  let warmupEnd = 0
  try {
    if (settings.warmupS > 0) warmup = await run.load(service, kinds, { durationS: settings.warmupS, tagged: true })
    warmupEnd = (Date.now() - startedAt) / 1000
    measured = await run.load(service, kinds, { tagged: true })
  } finally {
    clearInterval(sampler)
    clearInterval(progress)
  }
  const end = (Date.now() - startedAt) / 1000
  const peak = readMemory(service.pid)?.hwmKiB
  const at = (from: number) =>
    median(samples.filter((each) => each.t >= from && each.t < from + WINDOW_S).map((each) => each.kib))
  const afterWarmup = at(warmupEnd)
  const atEnd = at(end - WINDOW_S)
  const growth = ((atEnd - afterWarmup) / afterWarmup) * 100
  const logged = readFileSync(service.stdoutFile, 'utf8')
    .split('\n')
    .filter((line) => /"level":(4|5|6)0/.test(line))
  log(
    `\nmeasured: ${measured.requests} requests, ${measured.reqPerSec.toFixed(0)} req/s, p50 ${measured.p50Ms.toFixed(2)} ms, p99 ${measured.p99Ms.toFixed(2)} ms`,
  )
  log(`unexpected: ${measured.problems || 'none'} (warm-up: ${warmup?.problems || 'none'})`)
  log(
    `RSS (MiB, medians of ${WINDOW_S} s): ready ${mib(samples[0]?.kib)}, after warm-up ${mib(afterWarmup)}, end ${mib(atEnd)}; ` +
      `max sampled ${mib(Math.max(...samples.map((each) => each.kib)))}, VmHWM ${mib(peak)}`,
  )
  const grew = !(growth < RSS_GROWTH_TARGET_PCT)
  log(`RSS growth after warm-up → end: ${growth.toFixed(1)} % (target < ${RSS_GROWTH_TARGET_PCT} %: ${grew ? 'NOT MET' : 'met'})`)
  log(`service log lines at warn or above: ${logged.length}${logged.length ? `, first: ${logged[0]?.slice(0, 200)}` : ''}`)
  const failures = [measured.problems, warmup?.problems, readMemory(service.pid) === undefined && 'the service died'].filter(
    Boolean,
  )
  log(`\nRESULT: ${failures.length === 0 ? 'PASS' : `FAIL (${failures.join('; ')})`}`)
  return failures.length > 0
}

function mib(kib: number | undefined): string {
  return kib === undefined || !Number.isFinite(kib) ? '?' : (kib / 1024).toFixed(1)
}
