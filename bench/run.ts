// `npm run bench`: the service (node dist/cli.js serve) against a bare node:http baseline in the same run, on
// 127.0.0.1; prints per-scenario medians over interleaved rounds, the service/baseline ratio, memory, and the
// cost of one SQLite commit. Exit code 1 only when the harness fails (a server does not start, a request gets an
// unexpected status or a socket error); slow numbers never fail it. Settings: see readSettings below.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { type CommitLatency, measureCommitLatency } from './commit-latency.js'
import { type LoadOptions, type Measurement, measure, type Scenario } from './load.js'
import { type Memory, readMemory, type ServerProcess, startServer } from './processes.js'
import {
  commitTable,
  integer,
  integerSetting,
  log,
  type MemoryRow,
  memoryTable,
  type ResultRow,
  resultsTable,
  runScript,
  warn,
} from './report.js'
import { median } from './stats.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** A fixed key passed in API_KEYS (so no key is created at start-up); the baseline compares the header string. */
const API_KEY = 'bench-api-key-0123456789-abcdefghijklmnopqrstuvwxyz'
const AUTHORIZATION = `Bearer ${API_KEY}`
const NEW_PET = JSON.stringify({ name: 'bench-pet', categoryId: 7, status: 'available' })
const SEED_PETS = 1000
const PET_ID = 500
const MEMORY_SAMPLE_MS = 200
const COMMIT_PROBES = 200
/** The highest RATE_LIMIT_PER_MINUTE the service accepts. */
const RATE_LIMIT_PER_MINUTE = 10_000_000

const SCENARIOS: Scenario[] = [
  { name: 'listPets', method: 'GET', path: '/v1/pets?limit=20', authorized: true, expectedStatus: 200 },
  { name: 'getPet', method: 'GET', path: `/v1/pets/${PET_ID}`, authorized: true, expectedStatus: 200 },
  { name: 'createPet', method: 'POST', path: '/v1/pets', body: NEW_PET, authorized: true, expectedStatus: 201 },
  { name: 'unauthorized', method: 'GET', path: '/v1/pets', authorized: false, expectedStatus: 401 },
]
/** The one scenario also run against a second service process at LOG_LEVEL=info. */
const LOGGED_SCENARIO = 'listPets'

/** Bench settings from the environment, each a bounded integer. */
interface Settings {
  /** BENCH_DURATION_S (default 5, 1–60): seconds per measured run. */
  durationS: number
  /** BENCH_CONNECTIONS (default 32, 1–256): concurrent keep-alive connections. */
  connections: number
  /** BENCH_ROUNDS (default 3, 1–9): measured runs per scenario and target; medians are over these. */
  rounds: number
  /** BENCH_WARMUP_S (default 3, 0–30): an unrecorded run per scenario and target before the first round (JIT). */
  warmupS: number
  /** BENCH_SKIP_BUILD=1: use dist/ as it is instead of running `tsc -p .` first. */
  skipBuild: boolean
}

function readSettings(env: NodeJS.ProcessEnv): Settings {
  const int = (name: string, fallback: number, min: number, max: number) => integerSetting(env, name, fallback, min, max)
  return {
    durationS: int('BENCH_DURATION_S', 5, 1, 60),
    connections: int('BENCH_CONNECTIONS', 32, 1, 256),
    rounds: int('BENCH_ROUNDS', 3, 1, 9),
    warmupS: int('BENCH_WARMUP_S', 3, 0, 30),
    skipBuild: env.BENCH_SKIP_BUILD === '1',
  }
}

type TargetName = 'service' | 'service-info' | 'baseline'

const started = new Map<TargetName, ServerProcess>()

async function main(): Promise<void> {
  const startedAt = Date.now()
  const settings = readSettings(process.env)
  const cpu = cpus()
  log(`# Animal Store bench, ${new Date().toISOString()}`)
  log(`node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? '?'}, load average ${loadavg()[0]?.toFixed(2)}`)
  log(
    `commit ${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'src') ? ' with uncommitted changes in src/' : ''}`,
  )
  log(
    `${settings.rounds} rounds × ${settings.durationS} s, ${settings.connections} connections, warm-up ${settings.warmupS} s; ` +
      'the load generator runs in this process, on the same cores as the servers',
  )

  if (!settings.skipBuild) build()
  if (!existsSync(join(ROOT, 'dist/cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build`.')
  const tmp = mkdtempSync(join(tmpdir(), 'animal-store-bench-'))
  try {
    await run(settings, tmp)
  } finally {
    await stopAll()
    rmSync(tmp, { recursive: true, force: true })
  }
  log(`\nTotal bench time: ${((Date.now() - startedAt) / 1000).toFixed(0)} s; load average now ${loadavg()[0]?.toFixed(2)}`)
}

async function run(settings: Settings, tmp: string): Promise<void> {
  const databasePath = join(tmp, 'bench.db')
  const baselineScript = transpileBaseline(tmp)
  // The shipped defaults except: one process (WORKERS=1, so PID is the server), and a rate limit that is checked on
  // every request but that one key at bench rates never reaches (the default, 1,000/s per key, would answer 429).
  const serviceEnv = (logLevel: string) => ({
    ...process.env,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: logLevel,
    DATABASE_URL: `sqlite:${databasePath}`,
    API_KEYS: API_KEY,
    PUBLIC_URL: '',
    WORKERS: '1',
    RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
    METRICS_ENABLED: 'true',
    // Two services run at once: each takes a free metrics port instead of competing for 9464.
    METRICS_PORT: '0',
  })
  const afterReady = new Map<TargetName, Memory | undefined>()
  const launch = async (name: TargetName, args: string[], env: NodeJS.ProcessEnv) => {
    const server = await startServer(name, args, { cwd: ROOT, env, stdoutFile: join(tmp, `${name}.out`) })
    started.set(name, server)
    afterReady.set(name, readMemory(server.pid))
    log(`${name}: pid ${server.pid}, ${server.origin}`)
  }
  // The two service processes share one SQLite file (WAL); only one of them is under load at any time.
  await launch('service', ['dist/cli.js', 'serve'], serviceEnv('warn'))
  await launch('service-info', ['dist/cli.js', 'serve'], serviceEnv('info'))
  const baselineEnv = {
    ...process.env,
    BASELINE_AUTHORIZATION: AUTHORIZATION,
    BASELINE_NEW_PET: NEW_PET,
    BASELINE_LIST_SIZE: '20',
  }
  await launch('baseline', [baselineScript], baselineEnv)

  const peaks = new Map<TargetName, number>()
  const sampler = setInterval(() => {
    for (const [name, server] of started) {
      const rss = readMemory(server.pid)?.rssKiB ?? 0
      peaks.set(name, Math.max(peaks.get(name) ?? 0, rss))
    }
  }, MEMORY_SAMPLE_MS)

  try {
    const service = target('service')
    const seedStart = Date.now()
    const createPet = scenario('createPet')
    const seed = await measure(createPet, { ...loadOf(service, settings), connections: 8, amount: SEED_PETS })
    assertClean(`seeding ${SEED_PETS} pets`, seed)
    if (seed.completed !== SEED_PETS) throw new Error(`seeding: ${seed.completed} of ${SEED_PETS} pets created`)
    log(`seeded ${SEED_PETS} pets through POST /v1/pets in ${Date.now() - seedStart} ms (${integer(seed.reqPerSec)} req/s)`)
    await preflight()

    const targetsOf = (name: string): TargetName[] =>
      name === LOGGED_SCENARIO ? ['service', 'service-info', 'baseline'] : ['service', 'baseline']
    if (settings.warmupS > 0) {
      for (const each of SCENARIOS) {
        for (const name of targetsOf(each.name)) {
          const result = await measure(each, { ...loadOf(target(name), settings), durationS: settings.warmupS })
          if (problems(result)) warn(`warm-up ${each.name} on ${name}: ${problems(result)}`)
        }
      }
      log(`warm-up done (${settings.warmupS} s per scenario and target, not recorded)`)
    }

    const runs = new Map<string, Measurement[]>()
    for (let round = 0; round < settings.rounds; round++) {
      for (const each of SCENARIOS) {
        const names = rotate(targetsOf(each.name), round)
        for (const name of names) {
          const result = await measure(each, loadOf(target(name), settings))
          const key = `${each.name}/${name}`
          runs.set(key, [...(runs.get(key) ?? []), result])
          log(`round ${round + 1}/${settings.rounds} ${each.name.padEnd(12)} ${name.padEnd(12)} ${describe(result)}`)
          if (problems(result)) warn(`${each.name} on ${name}: ${problems(result)} (expected only ${each.expectedStatus})`)
        }
      }
      log(`  service RSS after round ${round + 1}: ${mib(readMemory(service.pid)?.rssKiB)} MiB`)
    }

    const afterLoad = new Map<TargetName, Memory | undefined>()
    for (const [name, server] of started) afterLoad.set(name, readMemory(server.pid))
    clearInterval(sampler)
    const serviceInfoLog = target('service-info').stdoutFile
    const serviceLog = target('service').stdoutFile
    await stopAll()

    const commits: CommitLatency[] = [
      measureCommitLatency(databasePath, 'FULL', COMMIT_PROBES),
      measureCommitLatency(databasePath, 'NORMAL', COMMIT_PROBES),
    ]

    const rows = SCENARIOS.map((each) => resultRow(each.name, 'service', runs))
    rows.push({ ...resultRow(LOGGED_SCENARIO, 'service-info', runs), scenario: `${LOGGED_SCENARIO} at LOG_LEVEL=info` })
    const memoryRows: MemoryRow[] = (['service', 'service-info', 'baseline'] as const).map((name) => ({
      process: name === 'service' ? 'service (LOG_LEVEL=warn)' : name === 'service-info' ? 'service (LOG_LEVEL=info)' : name,
      afterReady: afterReady.get(name),
      afterLoad: afterLoad.get(name),
      sampledPeakKiB: peaks.get(name) ?? Number.NaN,
    }))

    const infoRuns = runs.get(`${LOGGED_SCENARIO}/service-info`) ?? []
    const warnRuns = runs.get(`${LOGGED_SCENARIO}/service`) ?? []
    const loggingRatio = median(infoRuns.map((info, index) => info.reqPerSec / (warnRuns[index]?.reqPerSec ?? Number.NaN)))
    log(`\n## Results (medians of ${settings.rounds} rounds; ratio = median of per-round service/baseline req/s)\n`)
    log(resultsTable(rows))
    log(
      `\nLogging cost (${LOGGED_SCENARIO}): LOG_LEVEL=info / LOG_LEVEL=warn req/s = ${loggingRatio.toFixed(2)}; ` +
        `request log lines written at info: ${countLines(serviceInfoLog, '"msg":"request"')}, ` +
        `log lines written at warn: ${countLines(serviceLog, '{')}`,
    )
    log('\n## Memory (service RSS from /proc/PID/status)\n')
    log(memoryTable(memoryRows))
    log(`\n## One createPet commit outside HTTP (${COMMIT_PROBES} single-row inserts, same database file)\n`)
    log(commitTable(commits))
    if (rows.some((row) => row.problems)) {
      warn('some requests got an unexpected status or a socket error: the figures above do not measure what they claim')
      process.exitCode = 1
    }
  } finally {
    clearInterval(sampler)
  }

  /** One request per scenario and target: checks the status and compares body sizes. */
  async function preflight(): Promise<void> {
    const sizes: string[] = []
    for (const each of SCENARIOS) {
      const bytes: string[] = []
      for (const name of ['service', 'baseline'] as const) {
        const response = await fetch(target(name).origin + each.path, {
          method: each.method,
          headers: {
            ...(each.authorized && { authorization: AUTHORIZATION }),
            ...(each.body !== undefined && { 'content-type': 'application/json' }),
          },
          ...(each.body !== undefined && { body: each.body }),
        })
        const length = (await response.arrayBuffer()).byteLength
        if (response.status !== each.expectedStatus) {
          throw new Error(`${each.name} on ${name}: status ${response.status}, expected ${each.expectedStatus}`)
        }
        bytes.push(`${name} ${length} B`)
      }
      sizes.push(`${each.name}: ${bytes.join(' / ')}`)
    }
    log(`response bodies: ${sizes.join('; ')}`)
  }
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

/** Output of `git ARGS` in the project, trimmed; '?' when git fails. */
function git(...args: string[]): string {
  const result = spawnSync('git', args, { cwd: ROOT, encoding: 'utf8', timeout: 10_000 })
  return result.status === 0 ? result.stdout.trim() : '?'
}

/** Writes bench/baseline-server.ts as plain JavaScript to `dir`, so the baseline runs on bare node (no loader). */
function transpileBaseline(dir: string): string {
  const source = readFileSync(join(ROOT, 'bench/baseline-server.ts'), 'utf8')
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  })
  const path = join(dir, 'baseline-server.mjs')
  writeFileSync(path, outputText)
  return path
}

function target(name: TargetName): ServerProcess {
  const server = started.get(name)
  if (!server) throw new Error(`${name} is not running`)
  return server
}

function scenario(name: string): Scenario {
  const found = SCENARIOS.find((each) => each.name === name)
  if (!found) throw new Error(`no scenario ${name}`)
  return found
}

function loadOf(server: ServerProcess, settings: Settings): LoadOptions {
  return { origin: server.origin, authorization: AUTHORIZATION, connections: settings.connections, durationS: settings.durationS }
}

function resultRow(name: string, serviceName: TargetName, runs: Map<string, Measurement[]>): ResultRow {
  const service = runs.get(`${name}/${serviceName}`) ?? []
  const baseline = runs.get(`${name}/baseline`) ?? []
  const figures = (list: Measurement[]) => ({
    reqPerSec: median(list.map((each) => each.reqPerSec)),
    p50Ms: median(list.map((each) => each.p50Ms)),
    p99Ms: median(list.map((each) => each.p99Ms)),
  })
  const trouble = [
    ...service.map((each) => problems(each) && `${serviceName} ${problems(each)}`),
    ...baseline.map((each) => problems(each) && `baseline ${problems(each)}`),
  ].filter(Boolean)
  return {
    scenario: name,
    service: figures(service),
    baseline: figures(baseline),
    ratio: median(service.map((each, round) => each.reqPerSec / (baseline[round]?.reqPerSec ?? Number.NaN))),
    problems: trouble.join('; '),
  }
}

/** `500×3, 2 socket errors`, or '' when every response had the expected status. */
function problems(result: Measurement): string {
  const parts = Object.entries(result.unexpected).map(([status, count]) => `${status}×${count}`)
  if (result.errors > 0) parts.push(`${result.errors} socket errors/timeouts`)
  return parts.join(', ')
}

function assertClean(what: string, result: Measurement): void {
  if (problems(result)) throw new Error(`${what}: ${problems(result)}`)
}

function describe(result: Measurement): string {
  return `${integer(result.reqPerSec).padStart(6)} req/s  p50 ${result.p50Ms.toFixed(2)} ms  p99 ${result.p99Ms.toFixed(2)} ms`
}

function rotate<T>(items: T[], by: number): T[] {
  const shift = by % items.length
  return [...items.slice(shift), ...items.slice(0, shift)]
}

function countLines(path: string, containing: string): number {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.includes(containing)).length
}

function mib(kib: number | undefined): string {
  return kib === undefined ? '?' : (kib / 1024).toFixed(1)
}

async function stopAll(): Promise<void> {
  const servers = [...started.values()]
  started.clear()
  await Promise.all(servers.map((server) => server.stop()))
}

runScript('bench', main, stopAll)
