// A streaming replica of a test PostgreSQL (postgres-server.ts), for the tests and the bench of read
// replicas. The embedded binaries have no pg_basebackup, so the replica is a cold copy of the
// stopped primary's data folder, started as a hot standby (`standby.signal`, `primary_conninfo`)
// that streams from the primary through a physical replication slot of its own. The primary's
// defaults allow it: `wal_level = replica`, `max_wal_senders = 10`, and initdb's pg_hba.conf lets
// the `postgres` role replicate over 127.0.0.1 with its password.
import { randomBytes } from 'node:crypto'
import { appendFileSync, chmodSync, chownSync, cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { type PostgresServer, postgresReachableTmpdir, postgresUser, startServerIn } from './postgres-server.js'

/** A running standby of a test PostgreSQL: a PostgresServer (read-only), whose replay can be paused. */
export interface PostgresReplica extends PostgresServer {
  /** Pauses WAL replay (`pg_wal_replay_pause()`): the replica keeps receiving, and falls behind. Resolves once paused. */
  pauseReplay(): Promise<void>
  /** Resumes WAL replay (`pg_wal_replay_resume()`). */
  resumeReplay(): Promise<void>
  /** Promotes it to a primary of its own (`pg_promote()`, which waits for the promotion): it stops following. */
  promote(): Promise<void>
  /**
   * Resolves once the replica has replayed everything the primary had written when this was called
   * (`pg_current_wal_lsn()` there, `pg_last_wal_replay_lsn()` here); rejects after `timeoutMs`.
   */
  caughtUp(timeoutMs?: number): Promise<void>
}

/**
 * Makes a streaming replica of `primary`: creates a physical replication slot on it, stops it, copies
 * its data folder, starts it again, and starts the copy on a free port as a hot standby of it.
 * Resolves once the standby accepts read-only connections; destroy() deletes it and drops its slot
 * (when the primary still answers).
 */
export async function startReplica(primary: PostgresServer): Promise<PostgresReplica> {
  const owner = process.getuid?.() === 0 ? postgresUser() : undefined
  const dir = mkdtempSync(join(owner ? postgresReachableTmpdir() : tmpdir(), 'animal-store-pg-replica-'))
  chmodSync(dir, 0o755)
  const slot = `animal_store_replica_${randomBytes(4).toString('hex')}`
  const source = new URL(primary.url)
  try {
    await withClient(primary.url, (client) => client.query('select pg_create_physical_replication_slot($1)', [slot]))
    await primary.stop()
    try {
      const data = join(dir, 'data')
      cpSync(join(primary.dir, 'data'), data, { recursive: true })
      chmodSync(data, 0o700) // PostgreSQL refuses a data folder others may enter
      rmSync(join(data, 'postmaster.pid'), { force: true })
      writeFileSync(join(data, 'standby.signal'), '')
      const conninfo = `host=${source.hostname} port=${source.port} user=${decodeURIComponent(source.username)} password=${decodeURIComponent(source.password)} application_name=${slot}`
      appendFileSync(
        join(data, 'postgresql.auto.conf'),
        `primary_conninfo = '${conninfo.replaceAll("'", "''")}'\nprimary_slot_name = '${slot}'\n`,
      )
      if (owner) chownTree(dir, owner)
    } finally {
      await primary.start()
    }
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  // Feedback keeps the primary's vacuum from removing rows a replica query still reads (fewer recovery conflicts).
  const server = await startServerIn(dir, { hot_standby_feedback: 'on' })
  const admin = (sql: string) => withClient(server.url, (client) => client.query(sql))
  return {
    ...server,
    async pauseReplay() {
      await admin('select pg_wal_replay_pause()')
      // Pausing is requested, then takes effect between two records.
      while ((await admin('select pg_get_wal_replay_pause_state() as state')).rows[0]?.state !== 'paused') {
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    },
    resumeReplay: async () => {
      await admin('select pg_wal_replay_resume()')
    },
    promote: async () => {
      await admin('select pg_promote()')
    },
    async caughtUp(timeoutMs = 10_000) {
      const target = (await withClient(primary.url, (client) => client.query('select pg_current_wal_lsn()::text as lsn'))).rows[0]
        ?.lsn as string
      for (const stopAt = Date.now() + timeoutMs; ; await new Promise((resolve) => setTimeout(resolve, 5))) {
        const { rows } = await withClient(server.url, (client) =>
          client.query('select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [target]),
        )
        if (rows[0]?.done === true) return
        if (Date.now() > stopAt) throw new Error(`the replica has not replayed up to ${target} within ${timeoutMs} ms`)
      }
    },
    async destroy() {
      await server.destroy()
      await withClient(primary.url, (client) =>
        client.query('select pg_drop_replication_slot(slot_name) from pg_replication_slots where slot_name = $1', [slot]),
      ).catch(() => {}) // the primary is gone already
    },
  }
}

function chownTree(path: string, owner: { uid: number; gid: number }): void {
  chownSync(path, owner.uid, owner.gid)
  for (const entry of readdirSync(path, { recursive: true, withFileTypes: true })) {
    chownSync(join(entry.parentPath, entry.name), owner.uid, owner.gid)
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
