// `npm run bench`: the service as users start it (`node dist/cli.js serve`, what `npm start` runs) against a bare
// node:http baseline and a minimal Fastify app, in the same run, on 127.0.0.1, on SQLite and on PostgreSQL; prints
// per-scenario medians over alternating rounds, ratios, targets, fixed-rate p99 and peak RSS. Exit code 1 when the
// harness fails (a server does not start, a response has an unexpected status, a socket error); slow numbers
// never fail it. Settings: bench/settings.ts; method and targets: docs/benchmarks.md.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { measureCommitLatency } from './commit-latency.js'
import { collectCursorPaths, randomListPath } from './cursors.js'
import { postgresDatabase, sqliteDatabase } from './databases.js'
import { printHeader } from './header.js'
import { launchTargets } from './launch.js'
import { detectGenerators, type Generators, measure, pinTo, SERVER_CPU } from './load.js'
import { preflight } from './preflight.js'
import { killRunning, readMemory, type ServerProcess } from './processes.js'
import { seededRandom } from './random.js'
import { commitTable, integer, log, runScript, warn } from './report.js'
import {
  type FixedRateRow,
  fixedRateTable,
  label,
  type MemoryRow,
  memoryTable,
  type ResultRow,
  type Runs,
  resultRow,
  resultsTable,
} from './results.js'
import { LARGE_PETS, SCENARIOS, type Scenario, type ScenarioContext, SEEDED_PETS, type TargetName } from './scenarios.js'
import { type Database, readSettings, type Settings } from './settings.js'
import { median } from './stats.js'
import { transpileBenchFiles } from './transpile.js'
import { type Measurement, problems, type Workload } from './workload.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** A fixed key passed in API_KEYS (so no key is created at start-up); the baseline and the apps compare the header. */
const API_KEY = 'bench-api-key-0123456789-abcdefghijklmnopqrstuvwxyz'
const AUTHORIZATION = `Bearer ${API_KEY}`
/** Paths in the mixed workload's pools: first pages, and next pages from `Link` headers. */
const POOL_SIZE = 200
/** Single-row commits timed by the SQLite commit probe, per `synchronous` setting. */
const COMMIT_PROBES = 200
/** The bench files run as plain JavaScript in their own processes, and the ones they import. */
const TRANSPILED = ['baseline-server', 'fastify-sqlite-app', 'fastify-pg-app', 'autocannon-run', 'random', 'stats']

/** Undo steps for everything started and not yet stopped (servers by PID, PostgreSQL, the temp dir), newest last. */
const cleanups: (() => Promise<void> | void)[] = []
let cleaning: Promise<void> | undefined

/** Runs every pending undo step, newest first, once, even when a signal and the normal end both ask for it. */
function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    killRunning()
    await runCleanups(0)
  })()
  return cleaning
}

/** Runs and removes the undo steps registered from index `from` on, newest first; failures are only reported. */
async function runCleanups(from: number): Promise<void> {
  while (cleanups.length > from) {
    try {
      await cleanups.pop()?.()
    } catch (error) {
      warn(`clean-up: ${error instanceof Error ? error.message : String(error)}`)
    }
  }
}

async function main(): Promise<void> {
  const startedAt = Date.now()
  const settings = readSettings(process.env)
  const tmp = mkdtempSync(join(tmpdir(), 'animal-store-bench-'))
  cleanups.push(() => rmSync(tmp, { recursive: true, force: true }))
  cleanups.push(transpileBenchFiles(ROOT, tmp, TRANSPILED))
  const generators = detectGenerators(tmp, join(tmp, 'autocannon-run.js'), settings.forceAutocannon)
  printHeader(ROOT, settings, generators)
  if (!settings.skipBuild) build()
  if (!existsSync(join(ROOT, 'dist/cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build`.')
  let failed = false
  try {
    for (const database of settings.databases) {
      const scenarios = SCENARIOS.filter((each) => settings.scenarios.includes(each.id) && each.on[database])
      if (scenarios.length === 0) continue
      failed = (await benchDatabase(database, scenarios, settings, generators, tmp)) || failed
    }
  } finally {
    await cleanUp()
  }
  log(`\nTotal bench time: ${((Date.now() - startedAt) / 1000).toFixed(0)} s; load average now ${loadavg()[0]?.toFixed(2)}`)
  if (failed) {
    warn('some requests got an unexpected status or a socket error: the figures above do not measure what they claim')
    process.exitCode = 1
  }
}

/** Runs the scenarios of one database; resolves to true when any response had an unexpected status. */
async function benchDatabase(
  database: Database,
  scenarios: Scenario[],
  settings: Settings,
  generators: Generators,
  tmp: string,
): Promise<boolean> {
  log(`\n## ${database === 'sqlite' ? 'SQLite' : 'PostgreSQL'}\n`)
  const mark = cleanups.length
  try {
    return await benchStarted(database, scenarios, settings, generators, tmp)
  } finally {
    if (!cleaning) await runCleanups(mark)
  }
}

/** benchDatabase's work; what it starts is registered in `cleanups` and stopped by its caller. */
async function benchStarted(
  database: Database,
  scenarios: Scenario[],
  settings: Settings,
  generators: Generators,
  tmp: string,
): Promise<boolean> {
  const setupStart = Date.now()
  const needed = new Set(scenarios.flatMap((each) => each.on[database]?.targets ?? []))
  const servers = new Map<TargetName, ServerProcess>()
  const stopServers = async () => {
    const list = [...servers.values()]
    servers.clear()
    await Promise.all(list.map((server) => server.stop()))
  }
  cleanups.push(stopServers)
  let databaseUrl: string
  let largeUrl: string | undefined
  let sqlitePath: string | undefined
  if (database === 'sqlite') {
    sqlitePath = join(tmp, 'sqlite-10k.db')
    databaseUrl = await sqliteDatabase(ROOT, sqlitePath, SEEDED_PETS)
    if (needed.has('service-1m')) largeUrl = await sqliteDatabase(ROOT, join(tmp, 'sqlite-1m.db'), LARGE_PETS)
  } else {
    const postgres = await postgresDatabase(ROOT, SEEDED_PETS)
    cleanups.push(() => postgres.server.destroy())
    databaseUrl = postgres.url
  }
  log(
    `seeded ${integer(SEEDED_PETS)} pets${largeUrl ? ` (and ${integer(LARGE_PETS)} in a second file for (f))` : ''} ` +
      `straight through the driver in ${((Date.now() - setupStart) / 1000).toFixed(1)} s`,
  )

  const afterReady = new Map<TargetName, number>()
  await launchTargets(servers, afterReady, {
    root: ROOT,
    tmp,
    database,
    needed,
    prefix: pinTo(generators, SERVER_CPU),
    databaseUrl,
    largeUrl,
    sqlitePath,
    apiKey: API_KEY,
  })
  const server = (name: TargetName) => {
    const found = servers.get(name)
    if (!found) throw new Error(`${name} is not running`)
    return found
  }

  const random = seededRandom(7)
  const context: ScenarioContext = {
    seededPets: SEEDED_PETS,
    listPaths: Array.from({ length: POOL_SIZE }, () => randomListPath(random)),
    cursorPaths: scenarios.some((each) => each.id === 'g')
      ? await collectCursorPaths(server('service').origin, AUTHORIZATION, POOL_SIZE, random)
      : [],
  }
  const workloads = new Map(scenarios.map((each) => [each.id, each.workload(context)]))
  const workload = (scenario: Scenario) => workloads.get(scenario.id) as Workload
  const targets = (scenario: Scenario) => scenario.on[database]?.targets ?? []

  await preflight(
    scenarios.flatMap((each) => targets(each).map((name) => ({ scenario: each, target: server(name) }))),
    workload,
    AUTHORIZATION,
  )
  const load = (origin: string, durationS: number) => ({
    origin,
    authorization: AUTHORIZATION,
    connections: settings.connections,
    durationS,
  })
  let failed = false
  // A warm-up run with no response at all (a stall on a busy machine) is reported but is no harness failure.
  const check = (what: string, scenario: Scenario, result: Measurement, warmup = false) => {
    const trouble = problems(workload(scenario), result)
    if (trouble) {
      warn(`${what}: ${trouble}`)
      failed ||= !(warmup && result.completed === 0 && result.errors === 0)
    }
  }

  if (settings.warmupS > 0) {
    for (const scenario of scenarios) {
      for (const name of targets(scenario)) {
        const result = await measure(generators, workload(scenario), load(server(name).origin, settings.warmupS))
        check(`warm-up (${scenario.id}) on ${label(name)}`, scenario, result, true)
      }
    }
    log(`warm-up done (${settings.warmupS} s per scenario and target, discarded)`)
  }

  const runs: Runs = new Map()
  for (let round = 0; round < settings.rounds; round++) {
    for (const scenario of scenarios) {
      for (const name of rotate(targets(scenario), round)) {
        const result = await measure(generators, workload(scenario), load(server(name).origin, settings.durationS))
        const key = `${scenario.id}/${name}`
        runs.set(key, [...(runs.get(key) ?? []), result])
        log(
          `round ${round + 1}/${settings.rounds} (${scenario.id}) ${label(name).padEnd(20)} ${integer(result.reqPerSec).padStart(6)} req/s  ` +
            `p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms  statuses ${statusList(result.statuses)}`,
        )
        check(`(${scenario.id}) on ${label(name)}`, scenario, result)
      }
    }
  }

  const fixedRows: FixedRateRow[] = []
  for (const scenario of scenarios.filter((each) => each.fixedRate)) {
    const saturated = median((runs.get(`${scenario.id}/service`) ?? []).map((each) => each.reqPerSec))
    const rate = Math.max(1, Math.round(saturated / 2))
    const measured = await measure(generators, workload(scenario), {
      ...load(server('service').origin, settings.durationS),
      overallRate: rate,
    })
    check(`fixed-rate (${scenario.id})`, scenario, measured)
    fixedRows.push({
      scenario: `(${scenario.id}) ${scenario.title}`,
      offeredPerSec: rate,
      measured,
      problems: problems(workload(scenario), measured),
    })
    log(`fixed rate (${scenario.id}) ${integer(rate)} req/s offered: p99 ${measured.p99Ms.toFixed(2)} ms (${measured.generator})`)
  }

  const memoryRows: MemoryRow[] = [...servers].map(([name, each]) => ({
    process: label(name),
    afterReadyKiB: afterReady.get(name) ?? Number.NaN,
    peakKiB: readMemory(each.pid)?.hwmKiB ?? Number.NaN,
    judged: name === 'service',
  }))
  const serviceLog = server('service').stdoutFile
  await stopServers()
  log(`service log: ${countLines(serviceLog)} lines at the default LOG_LEVEL (info), written to a file`)

  const rows: ResultRow[] = scenarios.map((each) => resultRow(each, database, workload(each), runs))
  const name = database === 'sqlite' ? 'SQLite' : 'PostgreSQL'
  log(`\n### Results, ${name} (medians of ${settings.rounds} rounds; ratios: median of per-round ratios)\n`)
  log(resultsTable(rows))
  if (fixedRows.length > 0) {
    log(`\n### p99 at a fixed rate of half the service's saturated throughput, ${name} (autocannon overallRate)\n`)
    log(fixedRateTable(fixedRows))
  }
  log(`\n### Memory, ${name} (/proc/PID/status)\n`)
  log(memoryTable(memoryRows))
  if (sqlitePath) {
    log(`\n### One createPet commit outside HTTP (${COMMIT_PROBES} single-row inserts, the 10k database file)\n`)
    log(
      commitTable([
        measureCommitLatency(sqlitePath, 'FULL', COMMIT_PROBES),
        measureCommitLatency(sqlitePath, 'NORMAL', COMMIT_PROBES),
      ]),
    )
  }
  return failed || rows.some((row) => row.problems)
}

/** Builds dist/ with the project's own compiler (`tsc -p .`), bounded to 3 minutes. */
function build(): void {
  log('building dist/ (tsc -p .) ...')
  const result = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
    cwd: ROOT,
    stdio: 'inherit',
    timeout: 180_000,
  })
  if (result.status !== 0) throw new Error(`tsc -p . failed (status ${result.status}, ${result.error ?? 'see above'})`)
}

function statusList(statuses: Record<string, number>): string {
  return Object.entries(statuses)
    .map(([status, count]) => `${status}×${count}`)
    .join(' ')
}

function rotate<T>(items: T[], by: number): T[] {
  const shift = by % items.length
  return [...items.slice(shift), ...items.slice(0, shift)]
}

function countLines(path: string): number {
  return readFileSync(path, 'utf8').split('\n').length - 1
}

runScript('bench', main, cleanUp)
