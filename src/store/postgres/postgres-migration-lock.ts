// PostgreSQL's migration lock held by the migration transaction itself, so that a transaction
// pooler (PgBouncer, pool_mode=transaction) can neither hand it to another client nor leak it.
import { type DialectAdapter, type Kysely, PostgresAdapter, PostgresDialect, type PostgresDialectConfig, sql } from 'kysely'

// Kysely's own lock number: a release that still takes Kysely's session lock and this one exclude
// each other during a rolling deploy.
const LOCK_ID = '3853314791062309107'

/**
 * Kysely's PostgresAdapter with the migration lock moved into the migration transaction. Kysely
 * takes its lock (a session advisory lock, waiting up to an hour) on the migration connection and
 * then opens the transaction: behind a transaction pooler the lock lands on one server connection
 * and the transaction on another, and the lock outlives the run. Here acquiring opens the
 * transaction and takes `pg_advisory_xact_lock` in it, waiting at most `lockTimeoutMs` (ms) for it
 * and for every table lock the migrations need (then SQLSTATE 55P03, lock_not_available); Kysely's
 * own `begin` inside it is a no-op (PostgreSQL warns only), and its `commit` or `rollback` ends the
 * transaction and frees the lock. Releasing rolls back whatever is still open: the transaction of a
 * failed acquire, else nothing (a warning again).
 */
class TransactionLockAdapter extends PostgresAdapter {
  constructor(private readonly lockTimeoutMs: number) {
    super()
  }

  override async acquireMigrationLock(db: Kysely<any>): Promise<void> {
    await sql`begin`.execute(db)
    await sql`select set_config('lock_timeout', ${sql.lit(String(this.lockTimeoutMs))}, true), pg_advisory_xact_lock(${sql.lit(LOCK_ID)}::bigint)`.execute(
      db,
    )
  }

  override async releaseMigrationLock(db: Kysely<any>): Promise<void> {
    await sql`rollback`.execute(db)
  }
}

/** Kysely's PostgresDialect with TransactionLockAdapter; `lockTimeoutMs` bounds a migration's lock waits (ms). */
export class TransactionLockPostgresDialect extends PostgresDialect {
  constructor(
    config: PostgresDialectConfig,
    private readonly lockTimeoutMs: number,
  ) {
    super(config)
  }

  override createAdapter(): DialectAdapter {
    return new TransactionLockAdapter(this.lockTimeoutMs)
  }
}
