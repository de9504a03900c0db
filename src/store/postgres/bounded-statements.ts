// The service's own client-side bound on a PostgreSQL statement, in place of pg's `query_timeout`.
// pg implements that option by wrapping each statement's callback in closures that hold the
// statement, whose result holds its rows; measured under load, every page's rows then outlived V8's
// young-generation collections and were promoted, and garbage collection took 12–23 % of the
// service's CPU on a 100-pet page against 2 % without the option (docs/benchmarks.md). Here a
// statement runs in pg's callback form on a connection checked out of the pool, beside a timer that
// holds only that connection: past the bound the connection is discarded (pg-pool ends it, so the
// server rolls back what was open on it and a pooler drops what was queued) and the statement fails
// with pg's own wording, which unavailable.ts classifies as transient (503).
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely'
import type pg from 'pg'

/** The message of a statement past its bound: pg's own for `query_timeout`, so that it stays one transient error. */
export const STATEMENT_TIMEOUT_MESSAGE = 'Query read timeout'

/** One statement for pg: its text, values, and (reads) its prepared statement's name and `rowMode: 'array'`. */
export type Statement = pg.QueryConfig & { rowMode?: 'array' }

/** A connection checked out of a pool whose statements are bounded; released (or discarded) once. */
export interface BoundedConnection {
  /**
   * Runs `config`, rejecting with pg's error, or with STATEMENT_TIMEOUT_MESSAGE after `timeoutMs`
   * (ms), when the connection is discarded.
   */
  query<R extends pg.QueryResultRow>(config: Statement, timeoutMs: number): Promise<pg.QueryResult<R>>
  /** Returns the connection to the pool, or with `error` discards it; a no-op once released or discarded (later statements then reject). */
  release(error?: Error): void
}

/**
 * Sends `config` on `client` in pg's callback form, beside a timer that holds only `discard`: past
 * `timeoutMs` (ms) it calls `discard` and then `settle` with STATEMENT_TIMEOUT_MESSAGE's error;
 * otherwise `settle` gets pg's error or result. `settle` is called once.
 */
function sendBounded(
  client: pg.PoolClient,
  config: Statement,
  timeoutMs: number,
  discard: (error: Error) => void,
  settle: (error: Error | undefined, result?: pg.QueryResult) => void,
): void {
  let late = false
  const timer = setTimeout(() => {
    late = true
    const error = new Error(STATEMENT_TIMEOUT_MESSAGE)
    discard(error)
    settle(error)
  }, timeoutMs)
  try {
    client.query(config, (error: Error | undefined, result: pg.QueryResult) => {
      clearTimeout(timer)
      if (!late) settle(error, result) // else already settled; this is the connection's end reaching the statement
    })
  } catch (error) {
    clearTimeout(timer)
    settle(error as Error)
  }
}

/** Checks a connection out of `pool` (pg-pool's own wait and its connectionTimeoutMillis apply). */
async function checkOut(pool: pg.Pool): Promise<BoundedConnection> {
  const client = await pool.connect()
  let released = false
  let discardedBy: Error | undefined
  const release = (error?: Error) => {
    if (released) return
    released = true
    discardedBy = error
    client.release(error)
  }
  return {
    query: (config, timeoutMs) =>
      new Promise((resolve, reject) => {
        // After a discard, a later statement (Kysely's rollback of its transaction) fails as the one
        // that was cut did, never on a client the pool may have handed to someone else.
        if (released) {
          reject(discardedBy ?? new Error('a statement on a connection already returned to the pool'))
          return
        }
        sendBounded(client, config, timeoutMs, release, (error, result) =>
          error ? reject(error) : resolve(result as pg.QueryResult<never>),
        )
      }),
    release,
  }
}

/**
 * Runs `work` on a connection checked out of `pool`, returning it to the pool once `work` resolves;
 * when `work` rejects, the connection is discarded (so the server rolls back what was open on it)
 * and the rejection passed on.
 */
export async function onConnection<T>(pool: pg.Pool, work: (connection: BoundedConnection) => Promise<T>): Promise<T> {
  const connection = await checkOut(pool)
  try {
    const result = await work(connection)
    connection.release()
    return result
  } catch (error) {
    connection.release(error instanceof Error ? error : new Error(String(error)))
    throw error
  }
}

/**
 * Runs one statement on a connection of `pool`, bounded by `timeoutMs` (ms) from its checkout:
 * what `pool.query` does, with the service's bound. A statement that fails discards its connection,
 * as `pool.query` does.
 */
export function boundedQuery<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  config: Statement,
  timeoutMs: number,
): Promise<pg.QueryResult<R>> {
  // One promise for the checkout and the statement together, in pg-pool's and pg's callback forms:
  // every read and plain create takes this path, and each promise between them cost a microtask
  // (docs/benchmarks.md).
  return new Promise((resolve, reject) => {
    pool.connect((connectError, client, done) => {
      if (connectError || client === undefined) {
        reject(connectError ?? new Error('pg-pool gave no connection'))
        return
      }
      let released = false
      const release = (error?: Error) => {
        if (released) return
        released = true
        done(error)
      }
      // Back to the pool (discarded after an error, as pool.query does) before the caller goes on.
      sendBounded(client, config, timeoutMs, release, (error, result) => {
        release(error)
        if (error) reject(error)
        else resolve(result as pg.QueryResult<never>)
      })
    })
  })
}

/** `pool` as Kysely's PostgresDialect takes it, each of its statements bounded by `timeoutMs` (ms). */
export function boundedKyselyPool(pool: pg.Pool, timeoutMs: number): PostgresPool {
  return {
    connect: async () => {
      const connection = await checkOut(pool)
      const client = {
        query: async <R>(sql: string, parameters: readonly unknown[]) =>
          (await connection.query({ text: sql, values: [...parameters] }, timeoutMs)) as unknown as PostgresQueryResult<R>,
        release: () => connection.release(),
      }
      // Kysely streams rows through a cursor only for `.stream()`, which the service never calls.
      return client as PostgresPoolClient
    },
    end: () => pool.end(),
  }
}
