// Online copies of an SQLite database through SQLite's backup API: the live database into a new
// file (backup), and a verified copy back into the live file (restore). Every read and write of a
// database file goes through SQLite's own connections, so no lock of a running service is dropped
// (sqlite-file.ts) and a service writing meanwhile never sees a half-copied file.
import { closeSync, constants, existsSync, openSync, rmSync, statSync } from 'node:fs'
import { resolve } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import { checkBackupRows, rebuildDerivedRows } from './sqlite-backup-rows.js'
import { JOURNAL_SUFFIXES, prepareSqliteFile, prepareSqliteFolder, refuseUnsafeFiles } from './sqlite-file.js'
import { copyOnce } from './sqlite-private-copy.js'
import { checkBackupSchema } from './sqlite-schema-check.js'

/**
 * Pages copied per backup step (1 MiB at the default 4 KiB page): the granularity of progress reports.
 * Small steps cost nothing here: the source's snapshot is pinned, so no step ever restarts the copy.
 */
const BACKUP_PAGES_PER_STEP = 256

/** Mode of the files backup and restore create (a backup, the copy kept aside): owner only. */
const BACKUP_FILE_MODE = 0o600

/** How far a copy is: `copiedPages` of `totalPages` database pages of `pageSize` bytes. */
export interface BackupProgress {
  copiedPages: number
  totalPages: number
  pageSize: number
}

/** What a verified copy holds: rows counted in both tables, and its size in bytes on disk. */
export interface DatabaseSummary {
  pets: number
  apiKeys: number
  bytes: number
}

/** Options of backupSqlite and restoreSqlite. */
export interface CopyOptions {
  /** Called after every step of BACKUP_PAGES_PER_STEP pages, and once all are copied; must not throw. */
  onProgress?: (progress: BackupProgress) => void
}

/** Another process (a running service, an operator's `sqlite3` shell) has the live database open. */
export class DatabaseInUseError extends Error {
  constructor(path: string) {
    super(`another process has ${path} open (a running service?)`)
    this.name = 'DatabaseInUseError'
  }
}

/**
 * Copies the SQLite database at `livePath` into the new file `copyPath` (created BACKUP_FILE_MODE; an
 * existing file is never overwritten) with SQLite's online backup API, inside one read transaction:
 * the copy is the database as of the moment the backup began, while other processes keep writing
 * (WAL readers block no writer). The copy is then switched to a rollback journal, so that it is one
 * self-contained file, and verified: `PRAGMA integrity_check` is `ok` and its row counts equal the
 * source's in that transaction. Resolves to that summary.
 *
 * Throws when `livePath` names no file, or `copyPath` exists, its folder does not, or it names the
 * database's own -wal, -shm or -journal. Throws, removing the copy it created, when the source is
 * not an SQLite database, the verification fails, or on the driver's error (SQLITE_BUSY after the
 * 5 s busy timeout, disk full …).
 */
export async function backupSqlite(livePath: string, copyPath: string, options: CopyOptions = {}): Promise<DatabaseSummary> {
  if (!existsSync(livePath)) throw new Error(`there is no SQLite database at ${livePath}`)
  // While the database is closed its -wal may not exist; a copy by that name would be taken for
  // the journal at the next open, and wiped.
  if (JOURNAL_SUFFIXES.some((suffix) => resolve(copyPath) === resolve(livePath + suffix))) {
    throw new Error(`${copyPath} is the name of the database's own ${copyPath.slice(copyPath.lastIndexOf('-'))} file`)
  }
  createNewFile(copyPath)
  try {
    const source = new BetterSqlite3(livePath, { fileMustExist: true })
    let expected: Omit<DatabaseSummary, 'bytes'>
    try {
      source.pragma('busy_timeout = 5000')
      // The read transaction pins one snapshot for every step: without it, each step reads anew and
      // any commit by another process between two steps restarts the copy from the first page.
      source.exec('begin')
      expected = countRows(source)
      await copyPages(source, copyPath, options)
      source.exec('commit')
    } finally {
      source.close()
    }
    return verifyCopy(copyPath, expected, true)
  } catch (error) {
    rmSync(copyPath, { force: true })
    rmSync(`${copyPath}-journal`, { force: true })
    throw error
  }
}

/** What restoreSqlite did: the summary of the restored database, and where the one it replaced was kept. */
export interface RestoreResult extends DatabaseSummary {
  /** The previous database, copied aside by backupSqlite; undefined when there was none. */
  keptAt: string | undefined
}

/**
 * Replaces the contents of the live SQLite database at `livePath` with those of the backup at
 * `sourcePath`, through SQLite's backup API into the live file (one write transaction: other
 * connections see the old database or the new one, never a mix).
 *
 * In order: reads the backup once into the new private file `privateCopyPath` beside the live one
 * (sqlite-private-copy.ts), and from then on uses that copy only, so a backup changed meanwhile
 * changes nothing; verifies the copy (`PRAGMA integrity_check` is `ok`, it holds the `pets` and
 * `api_keys` tables, its schema is exactly what this release's migrations make: checkBackupSchema, so
 * no trigger, view, table or index the migrations do not make gets into the live file; and its rows
 * follow the API's rules: checkBackupRows); rebuilds in it what the service derives from rows
 * (rebuildDerivedRows: statistics, sequences, per-key record counts) and gives it the live file's
 * page size; unless `force`, refuses with DatabaseInUseError when another process has
 * the live file open, which it learns by asking SQLite for an exclusive lock with no wait (a running
 * service holds a shared lock on the file for as long as it runs); copies the live database aside to
 * `keepAsidePath` (backupSqlite: consistent, verified, BACKUP_FILE_MODE); restores from the private
 * copy; verifies the live file as backupSqlite verifies a copy; removes the private copy (also on
 * failure). A missing live file is created (sqlite-file.ts modes).
 *
 * Throws before changing the live file when the source is missing, not a regular file, the live file
 * itself, unsound, not of this release's schema (naming the offending objects) or holding a row that
 * breaks the API's rules (naming its table and rowid); when the live file or its journals are not the
 * service's own (refuseUnsafeFiles: a symbolic link, another user's, open to others), the private
 * copy exists, the live file is in use (and not `force`), or the copy aside fails.
 */
export async function restoreSqlite(
  sourcePath: string,
  livePath: string,
  paths: { keepAsidePath: string; privateCopyPath: string },
  options: CopyOptions & { force: boolean },
): Promise<RestoreResult> {
  const { keepAsidePath, privateCopyPath } = paths
  prepareSqliteFolder(livePath)
  refuseUnsafeFiles(livePath)
  await copyOnce(sourcePath, privateCopyPath, livePath)
  try {
    const expected = await checkPrivateCopy(privateCopyPath, sourcePath, livePath)
    let keptAt: string | undefined
    if (existsSync(livePath)) {
      if (!options.force && inUse(livePath)) throw new DatabaseInUseError(livePath)
      await backupSqlite(livePath, keepAsidePath)
      keptAt = keepAsidePath
    } else {
      prepareSqliteFile(livePath)
    }
    const copy = new BetterSqlite3(privateCopyPath, { readonly: true, fileMustExist: true })
    try {
      await copyPages(copy, livePath, options)
    } finally {
      copy.close()
    }
    return { ...verifyCopy(livePath, expected, false), keptAt }
  } finally {
    for (const suffix of ['', ...JOURNAL_SUFFIXES]) rmSync(privateCopyPath + suffix, { force: true })
  }
}

// Checks the private copy of the backup at `sourcePath` (named in messages) and makes it ready to
// restore: derived rows rebuilt, one file in rollback-journal mode, at the live file's page size (SQLite cannot change a
// WAL database's page size while copying into it). Resolves to its row counts.
async function checkPrivateCopy(copyPath: string, sourcePath: string, livePath: string): Promise<Omit<DatabaseSummary, 'bytes'>> {
  // Writable: SQLite's integrity_check verifies CHECK constraints (a status outside PetStatus) only
  // on a connection that may write. The copy is this process's own.
  const copy = new BetterSqlite3(copyPath, { fileMustExist: true })
  try {
    // Nothing the file's schema defines may run a function with side effects while it is read.
    copy.pragma('trusted_schema = OFF')
    verifySource(copy, sourcePath)
    copy.pragma('journal_mode = delete')
    await checkBackupSchema(copy, sourcePath)
    checkBackupRows(copy, sourcePath)
    rebuildDerivedRows(copy)
    const pageSize = livePageSize(livePath)
    if (pageSize !== undefined && pageSize !== copy.pragma('page_size', { simple: true })) {
      copy.pragma(`page_size = ${pageSize}`)
      copy.exec('vacuum')
    }
    return countRows(copy)
  } finally {
    copy.close()
  }
}

// The page size of the live database, or undefined when it has none yet (no file, or an empty one).
function livePageSize(path: string): number | undefined {
  if (!existsSync(path) || statSync(path).size === 0) return undefined
  const live = new BetterSqlite3(path, { readonly: true, fileMustExist: true })
  try {
    return live.pragma('page_size', { simple: true }) as number
  } finally {
    live.close()
  }
}

// O_EXCL: a new file, owner-only whatever the umask; an existing one (the live database itself, say)
// is never opened.
function createNewFile(path: string): void {
  let descriptor: number
  try {
    descriptor = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, BACKUP_FILE_MODE)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw new Error(`${path} already exists; a backup never overwrites a file`)
    if (code === 'ENOENT') throw new Error(`the folder of ${path} does not exist`)
    throw error
  }
  closeSync(descriptor)
}

// Whether another process holds any lock on the file. In exclusive locking mode SQLite needs an
// EXCLUSIVE lock on the database file to begin; every open connection elsewhere holds at least a
// SHARED one (in WAL mode from open to close), so the attempt fails at once with SQLITE_BUSY.
function inUse(path: string): boolean {
  const probe = new BetterSqlite3(path, { fileMustExist: true })
  try {
    probe.pragma('busy_timeout = 0')
    probe.pragma('locking_mode = exclusive')
    probe.exec('begin exclusive; commit')
    return false
  } catch (error) {
    if ((error as { code?: string }).code?.startsWith('SQLITE_BUSY')) return true
    throw error
  } finally {
    probe.close()
  }
}

async function copyPages(source: BetterSqlite3.Database, destination: string, options: CopyOptions): Promise<void> {
  const pageSize = source.pragma('page_size', { simple: true }) as number
  const { totalPages } = await source.backup(destination, {
    progress: ({ totalPages, remainingPages }) => {
      options.onProgress?.({ copiedPages: totalPages - remainingPages, totalPages, pageSize })
      return BACKUP_PAGES_PER_STEP
    },
  })
  // The driver reports steps still to come only; the last one is reported here.
  options.onProgress?.({ copiedPages: totalPages, totalPages, pageSize })
}

function verifySource(source: BetterSqlite3.Database, path: string): void {
  let integrity: unknown
  try {
    integrity = source.pragma('integrity_check', { simple: true })
  } catch (error) {
    throw new Error(`${path} is not a readable SQLite database: ${(error as Error).message}`, { cause: error })
  }
  if (integrity !== 'ok') throw new Error(`${path} fails PRAGMA integrity_check: ${String(integrity)}`)
  for (const table of ['pets', 'api_keys']) {
    if (!hasTable(source, table)) throw new Error(`${path} is not an Animal Store database (no ${table} table)`)
  }
}

// A copy in rollback-journal mode is one file that can be moved, checksummed or restored alone;
// the live file stays in WAL mode (the service sets it on open anyway).
function verifyCopy(path: string, expected: Omit<DatabaseSummary, 'bytes'>, singleFile: boolean): DatabaseSummary {
  const copy = new BetterSqlite3(path, { fileMustExist: true })
  try {
    copy.pragma('busy_timeout = 5000')
    if (singleFile) copy.pragma('journal_mode = delete')
    const integrity = copy.pragma('integrity_check', { simple: true })
    if (integrity !== 'ok') throw new Error(`the copy at ${path} fails PRAGMA integrity_check: ${String(integrity)}`)
    const counted = countRows(copy)
    if (counted.pets !== expected.pets || counted.apiKeys !== expected.apiKeys) {
      throw new Error(
        `the copy at ${path} holds ${counted.pets} pets and ${counted.apiKeys} API keys, the source ${expected.pets} and ${expected.apiKeys}`,
      )
    }
    return { ...counted, bytes: statSync(path).size }
  } finally {
    copy.close()
  }
}

function hasTable(database: BetterSqlite3.Database, table: string): boolean {
  return database.prepare("select 1 from sqlite_schema where type = 'table' and name = ?").get(table) !== undefined
}

// A database that was never migrated has neither table: it counts as empty.
function countRows(database: BetterSqlite3.Database): Omit<DatabaseSummary, 'bytes'> {
  const count = (table: string) =>
    hasTable(database, table) ? Number((database.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n) : 0
  return { pets: count('pets'), apiKeys: count('api_keys') }
}
