// Which driver errors mean "the database cannot serve now" (503, retry later) rather than a bug
// (500). Matched by code (SQLite result codes, PostgreSQL SQLSTATE classes, Node socket errors),
// except two errors of pg's pool that carry no code, matched by their fixed wording.

/** The database is unreachable, full, read-only or overloaded; retrying later may succeed. */
export class StoreUnavailableError extends Error {
  /** The driver's code (SQLite result code, SQLSTATE, errno) of the transient cause, for the logs. */
  readonly driverCode: string | undefined
  constructor(cause: unknown, driverCode?: string) {
    // The cause's text (never a password: drivers do not echo credentials) helps operators; clients
    // only ever see the catalog message of `service_unavailable`.
    super(`the database is unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause })
    this.name = 'StoreUnavailableError'
    this.driverCode = driverCode
  }
}

// better-sqlite3 `SqliteError.code`: primary code names, or extended ones that start with them.
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|READONLY|CANTOPEN|NOMEM|PROTOCOL)/
// PostgreSQL SQLSTATE classes 08 (connection), 53 (insufficient resources), 57P (operator
// intervention: shutdown, cannot connect now), 57014 (statement timeout: overloaded), 40001/40P01
// (retryable conflicts).
const POSTGRES_UNAVAILABLE = /^(08|53|57P|57014|40001|40P01)/
const PG_UNAVAILABLE =
  /^(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|Query read timeout|timeout exceeded when trying to connect)/
const SOCKET_UNAVAILABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH'])

/**
 * The error to throw for a failed database call: StoreUnavailableError when it, or an error it
 * wraps (`cause`, as migration failures do), is transient; else the error unchanged.
 */
export function classifyDriverError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError) return error
  const transient = transientCause(error)
  return transient ? new StoreUnavailableError(error, transient.code) : error
}

/** Whether `error`, or an error it wraps, is transient (what classifyDriverError makes a 503 of). */
export function isTransientDriverError(error: unknown): boolean {
  return error instanceof StoreUnavailableError || transientCause(error) !== undefined
}

function transientCause(error: unknown): { code: string | undefined } | undefined {
  for (let current: unknown = error; current instanceof Error; current = current.cause) {
    if (isTransient(current)) {
      const code = (current as { code?: unknown }).code
      return { code: typeof code === 'string' ? code : undefined }
    }
  }
  return undefined
}

function isTransient(error: Error): boolean {
  const code = (error as { code?: unknown }).code
  if (typeof code === 'string') {
    return SQLITE_UNAVAILABLE.test(code) || POSTGRES_UNAVAILABLE.test(code) || SOCKET_UNAVAILABLE.has(code)
  }
  // pg raises these without a code, in its own stable wording: the connection ended, a client that
  // lost its connection (or was closed) asked again, the client-side query_timeout, the pool's wait.
  return PG_UNAVAILABLE.test(error.message)
}
