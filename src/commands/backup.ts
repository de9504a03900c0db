// `animal-store backup --to FILE`: an online, verified copy of the SQLite database into a new file
// (store/sqlite/sqlite-backup.ts), with progress on stderr for large databases; PostgreSQL is pointed to pg_dump.
import { resolve } from 'node:path'
import type { Config } from '../config.js'
import { type BackupProgress, backupSqlite } from '../store/sqlite/sqlite-backup.js'

/** Databases at least this large (bytes) get progress lines on stderr; smaller ones copy in a moment. */
export const PROGRESS_MIN_BYTES = 8 * 1024 * 1024

/** A progress line is printed each time the copy passes another multiple of this percentage. */
export const PROGRESS_STEP_PERCENT = 10

/**
 * A progress callback that writes `LABEL: N% (X of Y MiB)` to `err` each time the copy passes another
 * PROGRESS_STEP_PERCENT, for databases of PROGRESS_MIN_BYTES or more; silent for smaller ones.
 */
export function progressLines(label: string, err: NodeJS.WritableStream): (progress: BackupProgress) => void {
  let printed = 0
  const mib = (pages: number, pageSize: number) => ((pages * pageSize) / 2 ** 20).toFixed(1)
  return ({ copiedPages, totalPages, pageSize }) => {
    if (totalPages * pageSize < PROGRESS_MIN_BYTES) return
    const percent = Math.floor((copiedPages / totalPages) * 100)
    if (percent < printed + PROGRESS_STEP_PERCENT) return
    printed = percent - (percent % PROGRESS_STEP_PERCENT)
    err.write(`${label}: ${percent}% (${mib(copiedPages, pageSize)} of ${mib(totalPages, pageSize)} MiB)\n`)
  }
}

/** The refusal for PostgreSQL: which tool does the job, with the command (docs/operating.md). */
export const POSTGRES_BACKUP_MESSAGE =
  'backup copies SQLite databases only; back up PostgreSQL with pg_dump: pg_dump --format=custom --file=FILE "$DATABASE_URL" (docs/operating.md)'

/**
 * `backup --to FILE`: copies the configured SQLite database, while the service may keep running and
 * writing, into the new file `to` (relative to `cwd`; created 0600, never overwritten), verifies the
 * copy (integrity_check, row counts) and prints one line to `out`:
 * `backed up N pets and M API keys to FILE (B bytes; integrity_check ok)`.
 * Throws (nothing left behind) with POSTGRES_BACKUP_MESSAGE on PostgreSQL, for `sqlite::memory:`, and
 * as backupSqlite does (no database file, `to` exists or its folder does not, a failed check).
 */
export async function backup(
  config: Config,
  to: string,
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
  cwd: string = process.cwd(),
): Promise<void> {
  if (config.database.dialect === 'postgres') throw new Error(POSTGRES_BACKUP_MESSAGE)
  if (config.database.path === ':memory:') throw new Error('DATABASE_URL is sqlite::memory:, which has nothing to back up')
  const copyPath = resolve(cwd, to)
  const summary = await backupSqlite(config.database.path, copyPath, { onProgress: progressLines('backup', err) })
  out.write(
    `backed up ${summary.pets} pets and ${summary.apiKeys} API keys to ${copyPath} (${summary.bytes} bytes; integrity_check ok)\n`,
  )
}
