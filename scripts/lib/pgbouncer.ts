// Debian's PgBouncer (/usr/sbin/pgbouncer) in transaction pooling in front of a test PostgreSQL, so
// that the suite can run through a pooler as deployments do (docs/deploying.md, "Connection poolers").
import { type ChildProcess, spawn } from 'node:child_process'
import { chmodSync, chownSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { freePort, postgresReachableTmpdir, postgresUser } from './postgres-server.js'

/** The PgBouncer binary Debian's `pgbouncer` package installs (1.18 on Debian 12). */
const PGBOUNCER = '/usr/sbin/pgbouncer'

/** A running PgBouncer: the URL through it (same user, password and database as the server's). */
export interface PgBouncer {
  url: string
  /** Its log so far (connections, errors), for a failing test's message. */
  log(): string
  /** Stops it (SIGTERM by PID, SIGKILL after 5 s) and deletes its folder. */
  destroy(): Promise<void>
}

/**
 * Starts PgBouncer with `pool_mode = transaction` in front of the server at `serverUrl`
 * (`postgres://USER:PASSWORD@127.0.0.1:PORT/DB`): every database name falls through to that server
 * (`* = host=… port=…`), so databases created later are reachable too; clients authenticate with
 * SCRAM against an auth_file holding the server's password. Every other setting is deploy/pgbouncer.ini's
 * as shipped. It refuses to run as root, so as root it runs as the `postgres`
 * user (the one the test server runs as). Resolves once it accepts connections;
 * rejects if it exits first or is not listening within 10 s.
 */
export async function startPgBouncer(serverUrl: string): Promise<PgBouncer> {
  const server = new URL(serverUrl)
  const user = decodeURIComponent(server.username)
  const password = decodeURIComponent(server.password)
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined
  const dir = mkdtempSync(join(owner ? postgresReachableTmpdir() : tmpdir(), 'animal-store-pgbouncer-'))
  const port = await freePort()
  const files = { ini: join(dir, 'pgbouncer.ini'), users: join(dir, 'userlist.txt'), log: join(dir, 'pgbouncer.log') }
  writeFileSync(files.users, `"${user}" "${password.replaceAll('"', '""')}"\n`, { mode: 0o600 })
  writeFileSync(files.ini, shippedConfig({ host: server.hostname, port: server.port }, port, files.users), { mode: 0o600 })
  if (owner) for (const path of [dir, files.ini, files.users]) chownSync(path, owner.uid, owner.gid)
  chmodSync(dir, 0o700)
  const logFd = openSync(files.log, 'a', 0o600)
  const child = spawn(PGBOUNCER, [files.ini], { stdio: ['ignore', logFd, logFd], ...owner })
  const log = () => readFileSync(files.log, 'utf8')
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  try {
    await listening(port, child, log)
  } catch (error) {
    await stop(child, exited)
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  const url = new URL(serverUrl)
  url.port = String(port)
  return {
    url: url.href,
    log,
    async destroy() {
      await stop(child, exited)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * deploy/pgbouncer.ini as shipped, with only its [databases] entry (every name falls through to the
 * test server), listen_addr, listen_port and auth_file replaced, and no Unix socket.
 */
function shippedConfig(server: { host: string; port: string }, port: number, authFile: string): string {
  const replaced: Record<string, string> = {
    listen_addr: '127.0.0.1',
    listen_port: String(port),
    auth_file: authFile,
  }
  const shipped = readFileSync(new URL('../../deploy/pgbouncer.ini', import.meta.url), 'utf8')
  const lines = shipped.split('\n').map((line) => {
    const name = /^(\w+)\s*=/.exec(line)?.[1]
    if (name === undefined) return line
    if (name in replaced) return `${name} = ${replaced[name]}`
    return line.startsWith('animal_store =') ? `* = host=${server.host} port=${server.port}` : line
  })
  for (const name of [...Object.keys(replaced), 'pool_mode']) {
    if (!lines.some((line) => line.startsWith(`${name} =`))) throw new Error(`deploy/pgbouncer.ini has no ${name}`)
  }
  return [...lines, 'unix_socket_dir =', ''].join('\n')
}

// Polls a TCP connect to `port` until it is accepted; fails at once if PgBouncer exits.
async function listening(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (const stopAt = Date.now() + 10_000; Date.now() < stopAt; await delay(25)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`pgbouncer exited:\n${log()}`)
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (accepted) return
  }
  throw new Error(`pgbouncer is not listening on ${port} after 10 s:\n${log()}`)
}

// SIGTERM is PgBouncer's immediate shutdown (SIGINT would wait for its clients); SIGKILL if it outlives 5 s.
async function stop(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  process.kill(child.pid, 'SIGTERM')
  const timer = new AbortController()
  const killed = delay(5_000, undefined, { signal: timer.signal })
    .then(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, 'SIGKILL'))
    .catch(() => {})
  await exited
  timer.abort()
  await killed
}
