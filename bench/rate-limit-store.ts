// The rate limiter's cost with the shared store on and off (docs/benchmarks.md, "Rate-limit store: off and on"): the
// service on one SQLite database twice, without RATE_LIMIT_STORE_URL and with it naming a redis-server on loopback,
// under scenario (a)'s list 20 in alternating rounds (saturated: req/s, CPU µs per request, p99), then each at half the
// store-off rate for its p99. Every request is counted; the limit is never reached, so each lease is a full batch.
import { type RedisServer, startRedisServer } from '../scripts/lib/redis-server.js'
import type { BenchDatabase } from './databases.js'
import { log, median } from './report.js'
import type { Run } from './run.js'
import { SCENARIOS, SEEDED_PETS } from './scenarios.js'
import type { Measurement } from './wrk.js'

const MODES = ['off', 'on'] as const

/** Runs the comparison on `database` (SQLite) and prints its table; true on a harness failure (an unexpected answer). */
export async function rateLimitStoreCost(run: Run, database: BenchDatabase): Promise<boolean> {
  const scenario = SCENARIOS.find((each) => each.id === 'a')
  if (!scenario) throw new Error('scenario (a) is gone')
  const kinds = scenario.kinds({ seeded: SEEDED_PETS, firstPages: [], nextPages: [] })
  log('\n## rate-limit store: the service without and with RATE_LIMIT_STORE_URL (redis-server on loopback), list 20')
  const redis: RedisServer = await startRedisServer()
  run.cleanups.push(() => redis.destroy())
  const servers = {
    off: await run.start('service', database),
    on: await run.start('service', database, { RATE_LIMIT_STORE_URL: redis.url }),
  }
  const rounds: Record<(typeof MODES)[number], Measurement[]> = { off: [], on: [] }
  let failed = false
  for (let round = 0; round < run.settings.rounds; round++) {
    for (const mode of round % 2 ? [...MODES].reverse() : MODES) {
      const measured = await run.load(servers[mode], kinds)
      rounds[mode].push(measured)
      failed ||= Boolean(measured.problems)
      log(
        `round ${round + 1} store ${mode.padEnd(3)} ${measured.reqPerSec.toFixed(0).padStart(6)} req/s  p99 ${measured.p99Ms.toFixed(2)} ms  ` +
          `CPU ${measured.cpuUs?.toFixed(1)} µs/req${measured.problems ? `  UNEXPECTED ${measured.problems}` : ''}`,
      )
    }
  }
  const rate = Math.max(1, Math.round(median(rounds.off.map((each) => each.reqPerSec)) / 2))
  const halfRate = { off: await run.load(servers.off, kinds, { rate }), on: await run.load(servers.on, kinds, { rate }) }
  failed ||= Boolean(halfRate.off.problems || halfRate.on.problems)
  const figure = (mode: (typeof MODES)[number]) => ({
    reqPerSec: median(rounds[mode].map((each) => each.reqPerSec)),
    cpuUs: median(rounds[mode].map((each) => each.cpuUs ?? Number.NaN)),
    p99Ms: median(rounds[mode].map((each) => each.p99Ms)),
    halfRateP99Ms: halfRate[mode].p99Ms,
  })
  const [off, on] = [figure('off'), figure('on')]
  log(`\n| store | req/s | CPU µs/req | p99 ms (saturated) | p99 ms at ${rate} req/s |`)
  log('|---|---:|---:|---:|---:|')
  for (const [mode, each] of [
    ['off', off],
    ['on', on],
  ] as const)
    log(
      `| ${mode} | ${each.reqPerSec.toFixed(0)} | ${each.cpuUs.toFixed(1)} | ${each.p99Ms.toFixed(2)} | ${each.halfRateP99Ms.toFixed(2)} |`,
    )
  log(
    `| on − off | ${(on.reqPerSec - off.reqPerSec).toFixed(0)} | ${(on.cpuUs - off.cpuUs).toFixed(1)} | ` +
      `${(on.p99Ms - off.p99Ms).toFixed(2)} | ${(on.halfRateP99Ms - off.halfRateP99Ms).toFixed(2)} |`,
  )
  return failed
}
