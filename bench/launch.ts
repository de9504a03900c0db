// Starting the processes one database's scenarios run against: the service (as `npm start` runs it), the service on
// the large database, the node:http baseline and the minimal Fastify app, each pinned by `prefix`.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { allowedCpus, readMemory, type ServerProcess, startServer } from './processes.js'
import { log } from './report.js'
import { label } from './results.js'
import { NEW_PET, type TargetName } from './scenarios.js'
import type { Database } from './settings.js'

/** The highest RATE_LIMIT_PER_MINUTE the service accepts: far above any offered load, but still counted. */
const RATE_LIMIT_PER_MINUTE = 10_000_000
/** The PostgreSQL connections of the Fastify + pg app: the service's DATABASE_POOL_MAX default. */
const POOL_MAX = 5

/** What to start, and where. */
export interface LaunchOptions {
  root: string
  /** The run's temp dir: transpiled bench files, and each process's stdout file. */
  tmp: string
  database: Database
  needed: Set<TargetName>
  /** What every server is started under, e.g. `taskset -c 0`. */
  prefix: string[]
  databaseUrl: string
  /** The DATABASE_URL of (f)'s 1M-row database, when (f) runs. */
  largeUrl: string | undefined
  /** The SQLite file behind `databaseUrl`, for the Fastify + better-sqlite3 app. */
  sqlitePath: string | undefined
  /** The one API key every target accepts (in API_KEYS, or as `Bearer KEY` compared as a string). */
  apiKey: string
}

/**
 * Starts every process in `options.needed` and adds each to `servers` as soon as it is up (so the caller can stop
 * what started even when a later one fails), with its RSS after readiness in `afterReadyKiB`; prints each command,
 * PID and allowed CPUs.
 */
export async function launchTargets(
  servers: Map<TargetName, ServerProcess>,
  afterReadyKiB: Map<TargetName, number>,
  options: LaunchOptions,
): Promise<void> {
  const { tmp, database } = options
  const launch = async (name: TargetName, args: string[], env: NodeJS.ProcessEnv) => {
    const server = await startServer(`${database} ${name}`, args, {
      cwd: options.root,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdoutFile: join(tmp, `${database}-${name}.out`),
      prefix: options.prefix,
    })
    servers.set(name, server)
    afterReadyKiB.set(name, readMemory(server.pid)?.rssKiB ?? Number.NaN)
    const command = `node ${args.map((arg) => arg.replace(tmp, '$TMP')).join(' ')}`
    log(`${label(name)}: \`${command}\`, pid ${server.pid}, CPUs ${allowedCpus(server.pid)}`)
  }
  // The service as `npm start` runs it (its node arguments read from package.json), with the project's node, shipped defaults
  // (LOG_LEVEL info, logs to a file; metrics on; one process, so the PID is the server), a fixed key, and the
  // highest rate limit, which is still checked on every request but never reached.
  const serviceEnv = (url: string) => ({
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: url,
    API_KEYS: options.apiKey,
    RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
    // (e) sends hundreds of thousands of 401s a minute from one address: raised likewise.
    AUTH_FAILURES_PER_MINUTE: String(RATE_LIMIT_PER_MINUTE),
    // Metrics stay on (the default) on their own listener; a free port, as two services run at once.
    METRICS_PORT: '0',
  })
  const authorization = `Bearer ${options.apiKey}`
  const start = npmStartArgs()
  if (options.needed.has('service')) await launch('service', start, serviceEnv(options.databaseUrl))
  if (options.largeUrl) await launch('service-1m', start, serviceEnv(options.largeUrl))
  if (options.needed.has('baseline')) {
    await launch('baseline', [join(tmp, 'baseline-server.js')], {
      BASELINE_AUTHORIZATION: authorization,
      BASELINE_NEW_PET: NEW_PET,
    })
  }
  if (options.needed.has('reference')) {
    const sqlite = database === 'sqlite'
    await launch('reference', [join(tmp, sqlite ? 'fastify-sqlite-app.js' : 'fastify-pg-app.js')], {
      REFERENCE_DATABASE: sqlite ? options.sqlitePath : options.databaseUrl,
      REFERENCE_POOL_MAX: String(POOL_MAX),
      REFERENCE_AUTHORIZATION: authorization,
    })
  }
}

/** The arguments `npm start` passes to node (package.json `scripts.start`, `node ARGS…`), so the bench starts exactly that. */
function npmStartArgs(): string[] {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }
  const [node, ...args] = pkg.scripts.start.split(/\s+/)
  if (node !== 'node') throw new Error(`npm start is not \`node …\`: ${pkg.scripts.start}`)
  return args
}
