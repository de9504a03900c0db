// Debian's redis-server (/usr/bin/redis-server) on a free loopback port, for the tests and the bench
// of the fleet-wide rate limits (RATE_LIMIT_STORE_URL): started, SIGKILLed and restarted on the same
// port by the caller, never persisting anything; with a password, or also on a TLS port whose
// certificate a throwaway certificate authority signs (openssl).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { freePort } from './postgres-server.js'

/** The binary Debian's `redis-server` package installs (7.0 on Debian 12). */
const REDIS_SERVER = '/usr/bin/redis-server'

/** How to start it: `password` (requirepass) for AUTH; `tls` for a TLS port besides the plain one. */
export interface RedisOptions {
  password?: string
  tls?: boolean
}

/** A running redis-server. */
export interface RedisServer {
  /** `redis://127.0.0.1:PORT` (without the password) */
  url: string
  port: number
  /** With `tls`: `rediss://localhost:TLS_PORT`, and the certificate authority's PEM file that signed its certificate (for NODE_EXTRA_CA_CERTS). */
  tls?: { url: string; caFile: string }
  /** Sends one inline command (`DBSIZE`, `FLUSHALL`) on the plain port, with the password; resolves with the first line of the reply. */
  command(inline: string): Promise<string>
  /** Its log so far, for a failing test's message. */
  log(): string
  /** Sends SIGKILL by PID and resolves once it has exited (its port then refuses connections). */
  kill(): Promise<void>
  /** Starts it again on the same port after kill (else does nothing); resolves once it answers PING. */
  restart(): Promise<void>
  /** Stops it (SIGKILL by PID) and deletes its folder. */
  destroy(): Promise<void>
}

/** Starts redis-server on 127.0.0.1 on a free port, with no persistence; resolves once it answers PING (within 10 s). */
export async function startRedisServer(options: RedisOptions = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-redis-'))
  const port = await freePort()
  const tlsPort = options.tls ? await freePort() : undefined
  const extra = [
    ...(options.password === undefined ? [] : ['--requirepass', options.password]),
    ...(tlsPort === undefined ? [] : tlsArguments(dir, tlsPort)),
  ]
  const logPath = join(dir, 'redis.log')
  const log = () => readFileSync(logPath, 'utf8')
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()
  const alive = () => child?.pid !== undefined && child.exitCode === null && child.signalCode === null
  const start = async () => {
    if (alive()) return
    const logFd = openSync(logPath, 'a', 0o600)
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra]
    const started = spawn(REDIS_SERVER, args, { stdio: ['ignore', logFd, logFd] })
    child = started
    exited = new Promise((resolve) => started.once('exit', () => resolve()))
    await answering(port, started, log, options.password)
  }
  const kill = async () => {
    if (alive() && child?.pid !== undefined) process.kill(child.pid, 'SIGKILL')
    await exited
  }
  try {
    await start()
  } catch (error) {
    await kill()
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    tls: tlsPort === undefined ? undefined : { url: `rediss://localhost:${tlsPort}`, caFile: join(dir, 'ca.crt') },
    command: (inline) => firstLine(port, inline, options.password),
    log,
    kill,
    restart: start,
    async destroy() {
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/**
 * The arguments of a TLS port `port` whose certificate (for localhost and 127.0.0.1) a new certificate
 * authority in `dir` signs, made with openssl; clients need not present one.
 */
function tlsArguments(dir: string, port: number): string[] {
  const file = (name: string) => join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' })
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
  openssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=animal-store test CA')
  openssl('req', ...key, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=localhost')
  writeFileSync(file('server.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  openssl(
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.crt',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.crt',
    '-days',
    '2',
    '-extfile',
    'server.ext',
  )
  return [
    '--tls-port',
    String(port),
    '--tls-cert-file',
    file('server.crt'),
    '--tls-key-file',
    file('server.key'),
    '--tls-ca-cert-file',
    file('ca.crt'),
    '--tls-auth-clients',
    'no',
  ]
}

/** The first line redis-server answers to `inline` on 127.0.0.1:`port` (after AUTH with `password`); '' when it closed first. */
function firstLine(port: number, inline: string, password?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    socket.setTimeout(1_000, () => socket.destroy(new Error(`no answer to ${inline} within 1 s`)))
    socket.once('connect', () => socket.write(`${password === undefined ? '' : `AUTH ${password}\r\n`}${inline}\r\n`))
    socket.on('data', (data) => {
      text += data.toString()
      const lines = text.split('\r\n')
      const wanted = password === undefined ? 1 : 2
      if (lines.length > wanted) {
        socket.destroy()
        resolve(lines[wanted - 1] as string)
      }
    })
    socket.once('error', reject)
    socket.once('close', () => resolve(''))
  })
}

// Sends PING until `+PONG` comes back; fails at once if the server exits.
async function answering(port: number, child: ChildProcess, log: () => string, password?: string): Promise<void> {
  for (const stopAt = Date.now() + 10_000; Date.now() < stopAt; await delay(20)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`redis-server exited:\n${log()}`)
    if ((await firstLine(port, 'PING', password).catch(() => '')) === '+PONG') return
  }
  throw new Error(`redis-server is not answering on ${port} after 10 s:\n${log()}`)
}
