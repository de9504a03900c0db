// `npm run bench`: the service as `npm start` runs it against the previous release and the reference apps (minimal and
// typical Fastify, typical Express, bare node:http), in the same run, pinned, on SQLite and PostgreSQL; prints the
// figures, PostgreSQL's own CPU per request, the comparison with the previous release and every target with its
// verdict (docs/benchmarks.md). `--soak` (`npm run soak`) is its long mode: the service alone under a mixed load for minutes,
// every status checked per kind, its memory sampled (docs/reliability.md). Exit code 1 when the harness fails (a
// server does not start, an unexpected status, a socket error); a missed target never fails it.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { buildRelease, PREVIOUS_RELEASE } from '../scripts/lib/previous-release.js'
import { type BenchDatabase, commitMedianMs, postgresDatabase, sqliteDatabase } from './databases.js'
import { cpuSeconds, killChildren, readMemory, type ServerProcess, startServer } from './processes.js'
import { rateLimitStoreCost } from './rate-limit-store.js'
import { replicaCapacity } from './replicas.js'
import { log, median, printFigures, printHeader, printPrevious, printTargets, type Results } from './report.js'
import {
  AUTHORIZATION,
  collectPools,
  DATABASES,
  type Database,
  type Pools,
  PROCESSES,
  type Process,
  preflight,
  type RequestKind,
  SCENARIOS,
  SEEDED_PETS,
} from './scenarios.js'
import { type ProgramPlaces, programOf, transpileReferences } from './servers.js'
import { soak } from './soak.js'
import { type LoadOptions, type Measurement, runWrk, wrkVersion } from './wrk.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** The settings of one run, from the command line (readSettings). */
export type Settings = ReturnType<typeof readSettings>

const OPTIONS = {
  quick: { type: 'boolean' },
  soak: { type: 'boolean' },
  'skip-build': { type: 'boolean' },
  scenarios: { type: 'string' },
  databases: { type: 'string' },
  duration: { type: 'string' },
  rounds: { type: 'string' },
  warmup: { type: 'string' },
  connections: { type: 'string' },
} as const

/**
 * Reads the options (docs/benchmarks.md, How to run); throws naming the option when one is unknown or out of range.
 * Defaults: the bench 3 rounds × 4 s after a 2 s warm-up (docs/benchmarks.md, How to run, says why); `--quick` 1
 * round × 1 s (checks the harness; its figures mean nothing); `--soak` 300 s after a 30 s warm-up at 128 connections,
 * on SQLite.
 */
export function readSettings(args: string[]) {
  const { values } = parseArgs({ args, options: OPTIONS, strict: true })
  const mode = values.soak ? 'soak' : values.quick ? 'quick' : 'bench'
  const [duration, rounds, warmup, connections] = { bench: [4, 3, 2, 64], quick: [1, 1, 0, 64], soak: [300, 1, 30, 128] }[mode]
  const int = (name: 'duration' | 'rounds' | 'warmup' | 'connections', fallback = 0, min: number, max: number) => {
    const text = values[name] ?? String(fallback)
    if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
      throw new Error(`--${name} must be an integer from ${min} to ${max}.`)
    return Number(text)
  }
  const list = <T extends string>(name: 'scenarios' | 'databases', allowed: readonly T[], fallback: readonly T[]) => {
    const picked = values[name]?.split(',') ?? fallback
    const unknown = picked.filter((each) => !allowed.includes(each as T))
    if (unknown.length > 0) throw new Error(`--${name}: unknown ${unknown.join(', ')} (allowed: ${allowed.join(', ')}).`)
    return allowed.filter((each) => picked.includes(each))
  }
  const ids = SCENARIOS.map((each) => each.id)
  return {
    quick: mode === 'quick',
    soak: mode === 'soak',
    skipBuild: values['skip-build'] === true,
    scenarios: list('scenarios', ids, ids),
    databases: list('databases', DATABASES, mode === 'soak' ? ['sqlite'] : DATABASES),
    durationS: int('duration', duration, 1, 86_400),
    rounds: int('rounds', rounds, 1, 9),
    warmupS: int('warmup', warmup, 0, 3600),
    connections: int('connections', connections, 1, 1024),
  }
}

/** A server the bench started, and the database it serves. */
export interface BenchServer extends ServerProcess {
  database: BenchDatabase
}

/** What every part of a run needs: where things are, how servers and wrk are started, and what to undo. */
export interface Run {
  settings: Settings
  /** The project's own node (node_modules/.bin/node, Node 24), which runs every server. */
  node: string
  tmp: string
  /** Where each process's program is (the previous release's once it is built). */
  places: ProgramPlaces
  /** `taskset -c CPU` when pinning is possible, else nothing. */
  pin(cpu: number): string[]
  /**
   * Loads one server with one workload from CPU 1; measures the server's CPU time per request and, on PostgreSQL,
   * the database server's (sampled just before and after the run).
   */
  load(server: BenchServer, kinds: RequestKind[], extra?: Partial<LoadOptions>): Promise<Measurement>
  /** Starts `process` (the service, the previous release or a reference) on CPU 0, on `database`. */
  start(process: Process, database: BenchDatabase, env?: NodeJS.ProcessEnv): Promise<BenchServer>
  /** Undo steps, run newest first at the end or on a signal. */
  cleanups: (() => Promise<void> | void)[]
}

let seed = 0

/**
 * One wrk run of `options` against `server`, with the server's CPU time per request (µs) and, when `server.database`
 * is PostgreSQL, PostgreSQL's own (its server's processes, sampled just before and after the run).
 */
export async function measuredLoad(
  server: Pick<ServerProcess, 'pid'> & { database: BenchDatabase },
  options: LoadOptions,
): Promise<Measurement> {
  const databaseCpu = server.database.serverCpuSeconds
  const databaseBefore = databaseCpu?.() ?? Number.NaN
  const cpuBefore = cpuSeconds(server.pid)
  const measured = await runWrk(options)
  const cpuUs = ((cpuSeconds(server.pid) - cpuBefore) / measured.requests) * 1e6
  if (databaseCpu === undefined) return { ...measured, cpuUs }
  return { ...measured, cpuUs, databaseCpuUs: ((databaseCpu() - databaseBefore) / measured.requests) * 1e6 }
}

async function main(): Promise<void> {
  const startedAt = Date.now()
  const settings = readSettings(process.argv.slice(2))
  const wrk = wrkVersion()
  const ownNode = join(ROOT, 'node_modules/.bin/node')
  const node = existsSync(ownNode) ? ownNode : process.execPath
  const pinned = spawnSync('taskset', ['--version']).error === undefined && availableParallelism() >= 2
  const tmp = mkdtempSync(join(tmpdir(), 'animal-store-bench-'))
  const run: Run = {
    settings,
    node,
    tmp,
    places: { node, references: tmp },
    pin: (cpu) => (pinned ? ['taskset', '-c', String(cpu)] : []),
    load: (server, kinds, extra) =>
      measuredLoad(server, {
        origin: server.origin,
        kinds,
        authorization: AUTHORIZATION,
        connections: settings.connections,
        durationS: settings.durationS,
        dir: tmp,
        prefix: run.pin(1),
        seed: ++seed,
        ...extra,
      }),
    start: (process, database, env) => startProcess(run, process, database, env),
    cleanups: [() => rmSync(tmp, { recursive: true, force: true })],
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      log(`${signal}: stopping what the bench started`)
      cleanUp(run).finally(() => process.exit(130))
    })
  }
  let failed = false
  try {
    printHeader(ROOT, node, `tsx bench/run.ts ${process.argv.slice(2).join(' ')}`.trim(), wrk, pinned)
    if (!settings.skipBuild) build(node)
    run.cleanups.push(transpileReferences(tmp))
    if (!settings.soak && needs(settings, 'previous')) {
      log(`building the previous release ${PREVIOUS_RELEASE.slice(0, 7)} (kept in ${tmpdir()} for the next run) ...`)
      run.places.previous = dirname(dirname(buildRelease(PREVIOUS_RELEASE)))
    }
    if (settings.soak) {
      for (const database of settings.databases) failed = (await soak(run, database, await openDatabase(run, database))) || failed
    } else {
      const results: Results = { rounds: new Map(), halfRate: new Map(), peakKiB: new Map() }
      for (const database of settings.databases) failed = (await benchDatabase(run, database, results)) || failed
      for (const database of settings.databases) printFigures(results, database, settings.rounds)
      const costlier = printPrevious(results, PREVIOUS_RELEASE.slice(0, 7))
      const missed = printTargets(results)
      const meaningless = settings.quick ? ' (--quick: these figures mean nothing)' : ''
      log(`\n${missed} target(s) missed${meaningless}`)
      log(`${costlier} scenario(s) FLAGGED against the previous release${meaningless}`)
    }
  } finally {
    await cleanUp(run)
  }
  log(`\nTotal time ${((Date.now() - startedAt) / 1000).toFixed(0)} s; load average now ${loadavg()[0]?.toFixed(2)}`)
  if (failed)
    throw new Error('some answers had an unexpected status or a socket error: the figures do not measure what they claim')
}

async function cleanUp(run: Run): Promise<void> {
  killChildren()
  for (let step = run.cleanups.pop(); step; step = run.cleanups.pop()) await step()
}

/** Builds dist/ with the project's compiler (`tsc -p .`), bounded to 3 minutes. */
function build(node: string): void {
  log('building dist/ (tsc -p .) ...')
  const result = spawnSync(node, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', '.'], {
    cwd: ROOT,
    stdio: 'inherit',
    timeout: 180_000,
  })
  if (result.status !== 0) throw new Error(`tsc -p . failed (status ${result.status})`)
}

/** Whether any selected scenario runs `process` on a selected database. */
function needs(settings: Settings, process: Process): boolean {
  return SCENARIOS.some(
    (scenario) =>
      settings.scenarios.includes(scenario.id) &&
      settings.databases.some((database) => scenario.on[database]?.processes.includes(process)),
  )
}

/** A migrated database seeded with SEEDED_PETS pets, destroyed at the end. */
async function openDatabase(run: Run, database: Database): Promise<BenchDatabase> {
  const opened =
    database === 'sqlite'
      ? await sqliteDatabase(run.node, ROOT, run.tmp, SEEDED_PETS)
      : await postgresDatabase(run.node, ROOT, SEEDED_PETS, run.pin(1).length > 0 ? 1 : undefined)
  run.cleanups.push(() => opened.destroy())
  return opened
}

/** Starts `process` on CPU 0 and registers its stop (bench/servers.ts says how each process is started). */
async function startProcess(
  run: Run,
  process: Process,
  database: BenchDatabase,
  env: NodeJS.ProcessEnv = {},
): Promise<BenchServer> {
  const program = programOf(process, database, run.places)
  const stdout = join(run.tmp, `${process}-${seed++}.out`)
  const server = await startServer(process, [...run.pin(0), ...program.argv], { ...program.env, ...env }, stdout)
  run.cleanups.push(() => server.stop())
  let shown = program.argv.join(' ').replaceAll(run.tmp, '$TMP').replaceAll(ROOT, '')
  if (run.places.previous) shown = shown.replaceAll(run.places.previous, '$PREVIOUS')
  log(`${process}: pid ${server.pid}, ${server.origin}, \`${shown}\``)
  return { ...server, database }
}

/** Every selected scenario on `database`: warm-up, alternating rounds, half-rate runs, peak RSS. True on a harness failure. */
async function benchDatabase(run: Run, database: Database, results: Results): Promise<boolean> {
  const { settings } = run
  const scenarios = SCENARIOS.filter((each) => settings.scenarios.includes(each.id) && each.on[database])
  if (scenarios.length === 0) return false
  log(`\n## ${database}: seeding ${SEEDED_PETS} pets, starting the servers`)
  const opened = await openDatabase(run, database)
  const mark = run.cleanups.length
  const servers = new Map<Process, BenchServer>()
  for (const process of PROCESSES) {
    if (scenarios.some((each) => each.on[database]?.processes.includes(process)))
      servers.set(process, await run.start(process, opened))
  }
  const pools = new Map<Process, Pools>()
  const pool = async (process: Process) => {
    if (!pools.has(process)) pools.set(process, await collectPools((servers.get(process) as BenchServer).origin))
    return pools.get(process) as Pools
  }
  const cells = []
  for (const scenario of scenarios) {
    for (const process of scenario.on[database]?.processes ?? []) {
      const kinds = scenario.kinds(
        scenario.id === 'g' ? await pool(process) : { seeded: SEEDED_PETS, firstPages: [], nextPages: [] },
      )
      await preflight((servers.get(process) as BenchServer).origin, kinds)
      cells.push({ scenario, process, kinds, server: servers.get(process) as BenchServer })
    }
  }
  let failed = false
  if (settings.warmupS > 0) {
    for (const cell of cells) {
      const { problems } = await run.load(cell.server, cell.kinds, { durationS: settings.warmupS })
      if (problems) log(`warm-up (${cell.scenario.id}) ${cell.process}: UNEXPECTED ${problems}`)
      failed ||= Boolean(problems)
    }
    log(`warm-up: ${settings.warmupS} s per scenario and process, discarded`)
  }
  for (let round = 0; round < settings.rounds; round++) {
    for (const scenario of scenarios) {
      const inScenario = cells.filter((cell) => cell.scenario === scenario)
      // The order rotates from round to round (A B C, B C A, C A B), so no process always runs first.
      for (const cell of [...inScenario.slice(round % inScenario.length), ...inScenario.slice(0, round % inScenario.length)]) {
        const measured = await run.load(cell.server, cell.kinds)
        const key = `${database}/${scenario.id}/${cell.process}`
        results.rounds.set(key, [...(results.rounds.get(key) ?? []), measured])
        failed ||= Boolean(measured.problems)
        const databaseCpu = measured.databaseCpuUs === undefined ? '' : `  PostgreSQL ${measured.databaseCpuUs.toFixed(0)} µs/req`
        log(
          `round ${round + 1} (${scenario.id}) ${cell.process.padEnd(15)} ${measured.reqPerSec.toFixed(0).padStart(6)} req/s  ` +
            `p50 ${measured.p50Ms.toFixed(2)} ms  p99 ${measured.p99Ms.toFixed(2)} ms  CPU ${measured.cpuUs?.toFixed(0)} µs/req${databaseCpu}` +
            `${measured.problems ? `  UNEXPECTED ${measured.problems}` : ''}`,
        )
      }
    }
  }
  for (const cell of cells.filter((each) => each.process === 'service' && each.scenario.halfRate)) {
    const saturated = median((results.rounds.get(`${database}/${cell.scenario.id}/service`) ?? []).map((each) => each.reqPerSec))
    const offered = Math.max(1, Math.round(saturated / 2))
    // wrk's pauses come out longer than asked on a busy machine: a short first run calibrates the rate asked for.
    const probe = await run.load(cell.server, cell.kinds, { rate: offered, durationS: Math.min(2, settings.durationS) })
    const asked = Math.round(offered * Math.min(3, offered / Math.max(1, probe.reqPerSec)))
    const measured = await run.load(cell.server, cell.kinds, { rate: asked })
    results.halfRate.set(`${database}/${cell.scenario.id}`, { offered, measured })
    failed ||= Boolean(measured.problems)
    log(
      `half rate (${cell.scenario.id}) ${offered} req/s offered, ${measured.reqPerSec.toFixed(0)} achieved: p99 ${measured.p99Ms.toFixed(2)} ms`,
    )
  }
  for (const [process, server] of servers)
    results.peakKiB.set(`${database}/${process}`, readMemory(server.pid)?.hwmKiB ?? Number.NaN)
  while (run.cleanups.length > mark) await run.cleanups.pop()?.()
  // The limiter's cost with the shared store off and on (bench/rate-limit-store.ts), on the same seeded database;
  // its redis-server and two services are stopped before anything else is measured.
  if (database === 'sqlite' && settings.scenarios.includes('a')) {
    failed = (await rateLimitStoreCost(run, opened)) || failed
    while (run.cleanups.length > mark) await run.cleanups.pop()?.()
  }
  // Reads with a streaming replica against the primary alone (bench/replicas.ts), on a pair of servers of its own.
  if (database === 'postgres' && settings.scenarios.includes('a')) {
    failed = (await replicaCapacity(run)) || failed
    while (run.cleanups.length > mark) await run.cleanups.pop()?.()
  }
  if (database === 'sqlite')
    log(`one commit on this disk (WAL, synchronous=FULL, outside HTTP): median ${commitMedianMs(opened.location).toFixed(3)} ms`)
  return failed
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(
    () => process.exit(),
    (error: unknown) => {
      process.stderr.write(`bench failed: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exit(1)
    },
  )
}
