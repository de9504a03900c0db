// `animal-store restore --from FILE [--force]`: puts a verified backup in place of the SQLite database,
// keeping the previous one aside (store/sqlite/sqlite-backup.ts); PostgreSQL is pointed to pg_restore.
import { resolve } from 'node:path'
import type { Config } from '../config.js'
import { DatabaseInUseError, restoreSqlite } from '../store/sqlite/sqlite-backup.js'
import { progressLines } from './backup.js'

/** The refusal for PostgreSQL: which tool does the job, with the command (docs/operating.md). */
export const POSTGRES_RESTORE_MESSAGE =
  'restore copies SQLite databases only; restore PostgreSQL with pg_restore: pg_restore --clean --if-exists --no-owner --single-transaction --dbname="$DATABASE_URL" FILE (docs/operating.md)'

/** Where the database replaced by a restore is kept: beside it, named for the moment (UTC), e.g. `animal-store.db.20261124T081500Z.before-restore`. */
export function keptAsidePath(livePath: string, now: Date): string {
  return `${livePath}.${timestamp(now)}.before-restore`
}

/** Where a restore reads the backup into before checking it, removed when it ends: `animal-store.db.20261124T081500Z.restoring`. */
function privateCopyPath(livePath: string, now: Date): string {
  return `${livePath}.${timestamp(now)}.restoring`
}

function timestamp(now: Date): string {
  return now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
}

/**
 * `restore --from FILE [--force]`: replaces the configured SQLite database with the backup `from`
 * (relative to `cwd`) after verifying it, keeping the previous database at keptAsidePath, and prints
 * what it did to `out` (progress for large files on `err`). Refuses while another process (a running
 * service) has the database open, unless `force`; after a forced restore the running service must be
 * restarted (it keeps the cursor key and key cache it loaded).
 * Throws, the live database unchanged, with POSTGRES_RESTORE_MESSAGE on PostgreSQL, for
 * `sqlite::memory:`, and as restoreSqlite does.
 */
export async function restore(
  config: Config,
  from: string,
  force: boolean,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  cwd: string = process.cwd(),
  now: Date = new Date(),
): Promise<void> {
  if (config.database.dialect === 'postgres') throw new Error(POSTGRES_RESTORE_MESSAGE)
  const livePath = config.database.path
  if (livePath === ':memory:') throw new Error('DATABASE_URL is sqlite::memory:, which cannot be restored into')
  let result: Awaited<ReturnType<typeof restoreSqlite>>
  try {
    const paths = { keepAsidePath: keptAsidePath(livePath, now), privateCopyPath: privateCopyPath(livePath, now) }
    result = await restoreSqlite(resolve(cwd, from), livePath, paths, {
      force,
      onProgress: progressLines('restore', err),
    })
  } catch (error) {
    if (error instanceof DatabaseInUseError) {
      throw new Error(`${error.message}: stop the service first, or pass --force (nothing was changed)`, { cause: error })
    }
    throw error
  }
  if (result.keptAt) out.write(`kept the previous database at ${result.keptAt}\n`)
  out.write(`restored ${result.pets} pets and ${result.apiKeys} API keys into ${livePath} (integrity_check ok)\n`)
  if (force) out.write('restart every service on this database now: it still holds what it loaded at start-up\n')
}
