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
import { type BenchDatabase, postgresDatabase, sqliteDatabase } from './databases.js'
import { cpuSeconds, killChildren, type ServerProcess, startServer } from './processes.js'
import { log, median } from './report.js'
import { readSettings } from './run.js'
import { AUTHORIZATION, collectPools, type Database, type Pools, type RequestKind, SCENARIOS, SEEDED_PETS } from './scenarios.js'
import { programOf } from './servers.js'
import { runWrk } from './wrk.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const NODE = join(ROOT, 'node_modules/.bin/node')

/** The checkout whose dist/ runs for `build`: this one for `.`, else the revision's build. */
const checkoutOf = (build: string) => (build === '.' ? ROOT : dirname(dirname(buildRelease(build))))

/** The value nearest fraction `at` (0–1) of `values` sorted: the quartiles printed beside the median. */
function quantile(values: number[], at: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.round((sorted.length - 1) * at)] ?? Number.NaN
}

/** One load of `kinds` on `server` for `durationS` (s) from CPU 1: CPU per request (µs), the server's and PostgreSQL's. */
async function load(server: ServerProcess, database: BenchDatabase, kinds: RequestKind[], durationS: number, dir: string) {
  const serverBefore = cpuSeconds(server.pid)
  const databaseBefore = database.serverCpuSeconds?.() ?? 0
  const measured = await runWrk({
    origin: server.origin,
    kinds,
    authorization: AUTHORIZATION,
    connections: 64,
    durationS,
    dir,
    prefix: ['taskset', '-c', '1'],
    seed: Math.floor(Math.random() * 1e9),
  })
  if (measured.problems) throw new Error(`${server.origin}: ${measured.problems}`)
  const perRequest = (seconds: number) => (seconds / measured.requests) * 1e6
  return {
    cpuUs: perRequest(cpuSeconds(server.pid) - serverBefore),
    databaseCpuUs: perRequest((database.serverCpuSeconds?.() ?? 0) - databaseBefore),
  }
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
  settings: ReturnType<typeof readSettings>,
  dir: string,
): Promise<void> {
  const database =
    databaseName === 'postgres'
      ? await postgresDatabase(NODE, ROOT, SEEDED_PETS, 1)
      : await sqliteDatabase(NODE, ROOT, dir, SEEDED_PETS)
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
    for (const server of servers) await load(server, database, create, 1, dir)
    for (const scenario of SCENARIOS.filter((each) => settings.scenarios.includes(each.id) && each.on[databaseName])) {
      const kinds = servers.map((_, index) => scenario.kinds(pools[index] as Pools))
      if (settings.warmupS > 0)
        for (const [index, server] of servers.entries()) await load(server, database, kinds[index] ?? [], settings.warmupS, dir)
      const ratios: number[] = []
      const databaseRatios: number[] = []
      for (let round = 0; round < settings.rounds; round++) {
        const order = round % 2 === 0 ? [0, 1] : [1, 0]
        const cpu: { cpuUs: number; databaseCpuUs: number }[] = []
        for (const index of order)
          cpu[index] = await load(servers[index] as ServerProcess, database, kinds[index] ?? [], settings.durationS, dir)
        const [a, b] = cpu as [{ cpuUs: number; databaseCpuUs: number }, { cpuUs: number; databaseCpuUs: number }]
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
