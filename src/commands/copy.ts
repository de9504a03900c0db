// `animal-store copy [--from URL] [--to URL] [--replace]`: copies every pet and API key from one database
// to another (moving up from SQLite to PostgreSQL), printing progress, and verifies the copy by row
// counts and checksums on both sides before it is committed.
import { existsSync } from 'node:fs'
import { type NamedDatabaseUrl, parseDatabaseUrl } from '../config.js'
import {
  type CopiedTable,
  type CopyProgress,
  CopyVerificationError,
  copyStore,
  type StoreSummary,
  TargetNotEmptyError,
} from '../store/copy.js'
import { type DatabaseConfig, openStore, type Store } from '../store/index.js'

/** A progress line is printed each time a table's copied rows pass a multiple of this, and at its end. */
export const PROGRESS_EVERY_ROWS = 10_000

/**
 * PostgreSQL pool settings for a copy: a transaction per side needs one connection each; statements
 * are bounded batches, but waiting for the target's table lock (running servers' writes) may take longer
 * than a request would, hence 60 s (ms).
 */
const COPY_POOL = { poolMax: 2, statementTimeoutMs: 60_000 }

/**
 * What `copy` acts on: `from` and `to` are database URLs as DATABASE_URL accepts them, each with the
 * flag or variable it came from (config.ts loadCopyUrls), which errors name.
 */
export interface CopyCommandOptions {
  from: NamedDatabaseUrl
  to: NamedDatabaseUrl
  replace: boolean
}

const LABELS: Record<CopiedTable, string> = { pets: 'pets', api_keys: 'API keys' }

/**
 * `copy`: migrates both databases, copies every pet and API key from
 * `from` to `to` (ids and all columns exact) in one target transaction, and prints to `out` a line
 * `copied N/TOTAL pets` every PROGRESS_EVERY_ROWS rows and at the end of each table, a `source:` and
 * a `target:` line (row counts and SHA-256 checksums), then `verified: …`.
 *
 * Throws (the target unchanged) when a URL is not usable (ConfigError naming its flag or variable;
 * URLs are never echoed), when `from` is not an existing SQLite file, when both name the same database, when
 * the target holds any pet or key and `replace` is false, when the checksums differ (after printing
 * both lines), or on a database error.
 */
export async function copy(options: CopyCommandOptions, out: NodeJS.WritableStream, cwd: string = process.cwd()): Promise<void> {
  const from = parseDatabaseUrl(options.from.url, cwd, COPY_POOL, options.from.name)
  const to = parseDatabaseUrl(options.to.url, cwd, COPY_POOL, options.to.name)
  if (from.dialect === 'sqlite' && from.path === ':memory:')
    throw new Error(`${options.from.name} sqlite::memory: is always empty; name a file`)
  if (to.dialect === 'sqlite' && to.path === ':memory:')
    throw new Error(`${options.to.name} sqlite::memory: would be lost on exit; name a file`)
  if (from.dialect === 'sqlite' && !existsSync(from.path))
    throw new Error(`${options.from.name} names no existing SQLite file: ${from.path}`)
  if (sameDatabase(from, to)) throw new Error(`${options.from.name} and ${options.to.name} name the same database`)

  const source = await openStore(from)
  const target = await openStore(to)
  try {
    await migrate(source, options.from.name)
    await migrate(target, options.to.name)
    out.write(`copying from ${describe(from)} to ${describe(to)}\n`)
    const printed: Partial<Record<CopiedTable, number>> = {}
    const onProgress = ({ table, copied, total }: CopyProgress) => {
      const step = Math.floor(copied / PROGRESS_EVERY_ROWS)
      if (copied === total || step > (printed[table] ?? 0)) {
        printed[table] = step
        out.write(`copied ${copied}/${total} ${LABELS[table]}\n`)
      }
    }
    let result: Awaited<ReturnType<typeof copyStore>>
    try {
      result = await copyStore(source.db, target.db, { replace: options.replace, onProgress })
    } catch (error) {
      if (error instanceof TargetNotEmptyError) {
        throw new Error(`${error.message}; pass --replace to empty it first (nothing was changed)`, { cause: error })
      }
      if (error instanceof CopyVerificationError) {
        printSummaries(out, error.source, error.target)
        throw new Error(`verification failed: ${error.message}; nothing was committed to the target`, { cause: error })
      }
      throw new Error(`copy failed, nothing was committed to the target: ${messageOf(error)}`, { cause: error })
    }
    printSummaries(out, result.source, result.target)
    out.write(`verified: the target matches the source (${result.copied.pets} pets, ${result.copied.apiKeys} API keys)\n`)
  } finally {
    await Promise.allSettled([source.close(), target.close()])
  }
}

// The flag or variable names which side failed; cli.ts redacts any URL password a driver message
// might carry.
async function migrate(store: Store, flag: string): Promise<void> {
  try {
    await store.migrate()
  } catch (error) {
    throw new Error(`${flag}: ${messageOf(error)}`, { cause: error })
  }
}

function printSummaries(out: NodeJS.WritableStream, source: StoreSummary, target: StoreSummary): void {
  for (const [side, summary] of [
    ['source', source],
    ['target', target],
  ] as const) {
    out.write(
      `${side}: ${summary.pets.rows} pets sha256:${summary.pets.sha256}, ${summary.apiKeys.rows} API keys sha256:${summary.apiKeys.sha256}\n`,
    )
  }
}

/** The database for people to read: the SQLite path, or the PostgreSQL host, port and database (no user, password or query). */
function describe(config: DatabaseConfig): string {
  if (config.dialect === 'sqlite') return `sqlite:${config.path}`
  const url = new URL(config.url)
  return `${url.protocol}//${url.host}${url.pathname}`
}

function sameDatabase(a: DatabaseConfig, b: DatabaseConfig): boolean {
  if (a.dialect === 'sqlite' && b.dialect === 'sqlite') return a.path === b.path
  if (a.dialect === 'postgres' && b.dialect === 'postgres') return a.url === b.url
  return false
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
