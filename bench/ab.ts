// A paired A/B of two builds of the service (docs/benchmarks.md, "A/B of two builds"): both started as `npm start`
// runs them, pinned, on one seeded database; the same requests sent to both before anything is measured (every list
// variant through the pools' pages, and creates), so that both builds' code has met the same statements and shapes;
// then alternating rounds per scenario. It prints CPU per request B ÷ A, the median of the per-round ratios with its
// quartiles, and PostgreSQL's own CPU the same way: on this noisy machine the paired ratio sees a few per cent where
// the full bench's three rounds cannot.
// Usage: npx tsx bench/ab.ts [--databases postgres] [--scenarios c,b,d] [--rounds 8] [--duration 3] [--warmup 2] A B
// A and B: a git revision (built as the previous release is, scripts/lib/previous-release.ts) or `.` (this checkout's
// dist/, as last built). Exit code 1 when the harness fails (a server does not start, an unexpected status).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { buildRelease } from '../scripts/lib/previous-release.js'
import { postgresDatabase, sqliteDatabase } from './databases.js'
import { killChildren, type ServerProcess, startServer } from './processes.js'
import { log, median } from './report.js'
import { measuredLoad, readSettings, type Settings } from './run.js'
import { AUTHORIZATION, collectPools, type Database, type Pools, type RequestKind, SCENARIOS, SEEDED_PETS } from './scenarios.js'
import { programOf } from './servers.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const NODE = join(ROOT, 'node_modules/.bin/node')

/** The checkout whose dist/ runs for `build`: this one for `.`, else the revision's build. */
const checkoutOf = (build: string) => (build === '.' ? ROOT : dirname(dirname(buildRelease(build))))

/** The value nearest fraction `at` (0–1) of `values` sorted: the quartiles printed beside the median. */
function quantile(values: number[], at: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.round((sorted.length - 1) * at)] ?? Number.NaN
}

async function main(): Promise<void> {
  const args = process.argv.slice(2)
  const builds = args.slice(-2)
  if (builds.length < 2 || builds.some((build) => build.startsWith('-'))) throw new Error('usage: bench/ab.ts [options] A B')
  const settings = readSettings(args.slice(0, -2))
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-ab-'))
  const checkouts = builds.map(checkoutOf)
  try {
    for (const databaseName of settings.databases) await abOn(databaseName, checkouts, builds, settings, dir)
  } finally {
    killChildren()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function abOn(
  databaseName: Database,
  checkouts: string[],
  builds: string[],
  settings: Settings,
  dir: string,
): Promise<void> {
  const database =
    databaseName === 'postgres'
      ? await postgresDatabase(NODE, ROOT, SEEDED_PETS, 1)
      : await sqliteDatabase(NODE, ROOT, dir, SEEDED_PETS)
  let seed = 0
  // One measured load from CPU 1: CPU per request, the server's and PostgreSQL's (µs); throws on an unexpected answer.
  const load = async ({ server, kinds }: { server: ServerProcess; kinds: RequestKind[] }, durationS: number) => {
    const measured = await measuredLoad(
      { pid: server.pid, database },
      {
        origin: server.origin,
        kinds,
        authorization: AUTHORIZATION,
        connections: settings.connections,
        durationS,
        dir,
        prefix: ['taskset', '-c', '1'],
        seed: ++seed,
      },
    )
    if (measured.problems) throw new Error(`${server.origin}: ${measured.problems}`)
    return { cpuUs: measured.cpuUs ?? Number.NaN, databaseCpuUs: measured.databaseCpuUs ?? Number.NaN }
  }
  try {
    const servers: ServerProcess[] = []
    for (const [index, checkout] of checkouts.entries()) {
      const program = programOf('previous', database, { node: NODE, references: dir, previous: checkout })
      servers.push(
        await startServer(builds[index] ?? '', ['taskset', '-c', '0', ...program.argv], program.env, join(dir, `${index}.out`)),
      )
    }
    const pools: Pools[] = []
    for (const server of servers) pools.push(await collectPools(server.origin))
    const create = SCENARIOS.find((scenario) => scenario.id === 'c')?.kinds(pools[0] as Pools) ?? []
    for (const server of servers) await load({ server, kinds: create }, 1)
    for (const scenario of SCENARIOS.filter((each) => settings.scenarios.includes(each.id) && each.on[databaseName])) {
      const runs = servers.map((server, index) => ({ server, kinds: scenario.kinds(pools[index] as Pools) }))
      if (settings.warmupS > 0) for (const run of runs) await load(run, settings.warmupS)
      const ratios: number[] = []
      const databaseRatios: number[] = []
      for (let round = 0; round < settings.rounds; round++) {
        // A first in even rounds, B first in odd ones.
        const cpu: Awaited<ReturnType<typeof load>>[] = []
        for (const index of round % 2 === 0 ? [0, 1] : [1, 0])
          cpu[index] = await load(runs[index] as (typeof runs)[number], settings.durationS)
        const [a, b] = cpu as [(typeof cpu)[number], (typeof cpu)[number]]
        ratios.push(b.cpuUs / a.cpuUs)
        databaseRatios.push(b.databaseCpuUs / a.databaseCpuUs)
      }
      const postgres = databaseName === 'postgres' ? `; PostgreSQL's CPU ${median(databaseRatios).toFixed(3)}` : ''
      log(
        `${databaseName} (${scenario.id}) ${scenario.title}: CPU per request ${builds[1]} ÷ ${builds[0]} ` +
          `${median(ratios).toFixed(3)} (quartiles ${quantile(ratios, 0.25).toFixed(3)}–${quantile(ratios, 0.75).toFixed(3)}, ` +
          `${settings.rounds} rounds of ${settings.durationS} s)${postgres}`,
      )
    }
    for (const server of servers) await server.stop()
  } finally {
    await database.destroy()
  }
}

main().catch((error) => {
  killChildren()
  console.error(error)
  process.exit(1)
})
