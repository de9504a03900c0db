// The SQLite file's place on disk: its folder created 0700 and the file itself 0600 before the driver
// first opens it, so the data (and the API key hashes) are readable by the service's user alone;
// and never reached through a symbolic link, which would put them wherever the link points.
import { closeSync, constants, lstatSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'

/** Mode of a data folder this creates: owner only (a umask can only remove bits). */
const DATA_FOLDER_MODE = 0o700
/** Mode of a database file this creates; SQLite gives its -wal and -shm files the same mode. */
const DATABASE_FILE_MODE = 0o600

/** The files SQLite keeps beside a database, by suffix. */
export const JOURNAL_SUFFIXES: readonly string[] = ['-wal', '-shm', '-journal']

/**
 * Creates the folders on the way to `path` (DATA_FOLDER_MODE) and the database file itself
 * (DATABASE_FILE_MODE) when they do not exist, whatever the process's umask. Existing folders and
 * files keep their modes: an operator may have chosen them. `:memory:` is left alone.
 * An existing file is never opened (O_EXCL), so this is safe to call while connections of this
 * process hold the file (docs/operating.md, "Other processes on the SQLite file").
 * Throws refuseSymlinks' error, or the file system's (EACCES, ENOSPC …), never EEXIST.
 */
export function prepareSqliteFile(path: string): void {
  if (path === ':memory:') return
  prepareSqliteFolder(path)
  refuseSymlinks(path)
  // Closing any descriptor of a file releases every POSIX lock the process holds on it, including the
  // SHARED lock SQLite keeps while a connection is open; another process's SQLite would then think
  // itself alone and delete the live -wal on close. O_EXCL opens only a file that did not exist, which
  // no connection can hold.
  let descriptor: number
  try {
    descriptor = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, DATABASE_FILE_MODE)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return
    throw error
  }
  closeSync(descriptor)
}

/** Creates the folders on the way to the database file `path` (DATA_FOLDER_MODE) that do not exist. */
export function prepareSqliteFolder(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: DATA_FOLDER_MODE })
}

/**
 * Throws an Error naming the first of the database file `path` and its JOURNAL_SUFFIXES files that
 * is a symbolic link (dangling or not): SQLite would follow it, creating or writing the data at the
 * link's target with that folder's owner able to read or swap it. Folders on the way may be links.
 */
export function refuseSymlinks(path: string): void {
  for (const file of [path, ...JOURNAL_SUFFIXES.map((suffix) => path + suffix)]) {
    if (lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink()) {
      throw new Error(
        `${file} is a symbolic link; the database and its -wal, -shm and -journal must be files (set DATABASE_URL to the real path)`,
      )
    }
  }
}
