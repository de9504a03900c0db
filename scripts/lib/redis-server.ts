// Debian's redis-server (/usr/bin/redis-server) on a free loopback port, for the tests and the bench
// of the fleet-wide rate limits (RATE_LIMIT_STORE_URL): started, SIGKILLed and restarted on the same
// port by the caller, never persisting anything.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { freePort } from './postgres-server.js'

/** The binary Debian's `redis-server` package installs (7.0 on Debian 12). */
const REDIS_SERVER = '/usr/bin/redis-server'

/** A running redis-server. */
export interface RedisServer {
  /** `redis://127.0.0.1:PORT` */
  url: string
  port: number
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
export async function startRedisServer(): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-redis-'))
  const port = await freePort()
  const logPath = join(dir, 'redis.log')
  const log = () => readFileSync(logPath, 'utf8')
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()
  const alive = () => child?.pid !== undefined && child.exitCode === null && child.signalCode === null
  const start = async () => {
    if (alive()) return
    const logFd = openSync(logPath, 'a', 0o600)
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir]
    const started = spawn(REDIS_SERVER, args, { stdio: ['ignore', logFd, logFd] })
    child = started
    exited = new Promise((resolve) => started.once('exit', () => resolve()))
    await answering(port, started, log)
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
    log,
    kill,
    restart: start,
    async destroy() {
      await kill()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

// Sends PING until `+PONG` comes back; fails at once if the server exits.
async function answering(port: number, child: ChildProcess, log: () => string): Promise<void> {
  for (const stopAt = Date.now() + 10_000; Date.now() < stopAt; await delay(20)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`redis-server exited:\n${log()}`)
    const pong = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.setTimeout(1_000, () => socket.destroy())
      socket.once('connect', () => socket.write('PING\r\n'))
      socket.once('data', (data) => {
        socket.destroy()
        resolve(data.toString().startsWith('+PONG'))
      })
      socket.once('error', () => resolve(false))
      socket.once('close', () => resolve(false))
    })
    if (pong) return
  }
  throw new Error(`redis-server is not answering on ${port} after 10 s:\n${log()}`)
}
