// The SQLite file's place on disk: its folder created 0700 and the file itself 0600 before the driver
// first opens it, so the data (and the API key hashes) are readable by the service's user alone;
// never reached through a symbolic link, which would put them wherever the link points; and an
// existing file used only when it is the service's own, as OpenSSH's StrictModes treats its files.
import { closeSync, constants, lstatSync, mkdirSync, openSync, statSync } from 'node:fs'
import { dirname } from 'node:path'

/** Mode of a data folder this creates: owner only (a umask can only remove bits). */
const DATA_FOLDER_MODE = 0o700
/** Mode of a database file this creates; SQLite gives its -wal and -shm files the same mode. */
const DATABASE_FILE_MODE = 0o600

/** The files SQLite keeps beside a database, by suffix. */
export const JOURNAL_SUFFIXES: readonly string[] = ['-wal', '-shm', '-journal']

/**
 * Creates the folders on the way to `path` (DATA_FOLDER_MODE) and the database file itself
 * (DATABASE_FILE_MODE) when they do not exist, whatever the process's umask, then checks what is
 * there (refuseUnsafeFiles): an existing database, -wal, -shm or -journal is used only when it is the
 * service's own. `:memory:` is left alone.
 * An existing file is never opened (O_EXCL), so this is safe to call while connections of this
 * process hold the file (docs/operating.md, "Other processes on the SQLite file").
 * Throws refuseUnsafeFiles' error, or the file system's (EACCES, ENOSPC …), never EEXIST.
 */
export function prepareSqliteFile(path: string): void {
  if (path === ':memory:') return
  prepareSqliteFolder(path)
  refuseUnsafeFiles(path)
  // Closing any descriptor of a file releases every POSIX lock the process holds on it, including the
  // SHARED lock SQLite keeps while a connection is open; another process's SQLite would then think
  // itself alone and delete the live -wal on close. O_EXCL opens only a file that did not exist, which
  // no connection can hold.
  let descriptor: number
  try {
    descriptor = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, DATABASE_FILE_MODE)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    // Someone may have made it since the check above.
    refuseUnsafeFiles(path)
    return
  }
  closeSync(descriptor)
}

/** Creates the folders on the way to the database file `path` (DATA_FOLDER_MODE) that do not exist. */
export function prepareSqliteFolder(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: DATA_FOLDER_MODE })
}

/**
 * Throws an Error naming the first of the database file `path` and its JOURNAL_SUFFIXES files that
 * exists and is not the service's own, saying how to make it so:
 * - a symbolic link (dangling or not): SQLite would follow it, creating or writing the data at the
 *   link's target with that folder's owner able to read or swap it;
 * - a file of another user than the process's (effective uid): it stays theirs, whoever made it
 *   before the service first started (in a shared folder, say) reads and changes the data;
 * - a file any group or other permission bit opens to other users (what the service creates is
 *   DATABASE_FILE_MODE; a release before the one that made it so created its files 0644).
 * Also when the folder of `path` may be written by every user (`o+w`, as /tmp): anyone could put a
 * file of their own in the place of one of these. Missing files pass; folders on the way may be links.
 */
export function refuseUnsafeFiles(path: string): void {
  const folder = dirname(path)
  const folderMode = statSync(folder, { throwIfNoEntry: false })?.mode ?? 0
  if (folderMode & 0o002) {
    throw new Error(
      `the folder of ${path} may be written by every user (mode ${octal(folderMode)}): another user could put files of their own in place of the database's; keep it in a folder of the service's user (a new one is created 0700)`,
    )
  }
  const uid = process.geteuid?.()
  for (const file of [path, ...JOURNAL_SUFFIXES.map((suffix) => path + suffix)]) {
    const stat = lstatSync(file, { throwIfNoEntry: false })
    if (stat === undefined) continue
    if (stat.isSymbolicLink()) {
      throw new Error(
        `${file} is a symbolic link; the database and its -wal, -shm and -journal must be files (set DATABASE_URL to the real path)`,
      )
    }
    if (uid !== undefined && stat.uid !== uid) {
      throw new Error(
        `${file} belongs to another user (uid ${stat.uid}), not to the service's (uid ${uid}): they could read and change the data; move it away, or give it to the service's user (chown), and start again`,
      )
    }
    if (stat.mode & 0o077) {
      throw new Error(
        `${file} is open to other users (mode ${octal(stat.mode)}): the database holds the API keys' hashes; make it and its -wal and -shm readable by the service's user alone (chmod 600), as the service creates them`,
      )
    }
  }
}

// A mode's permission bits (with setuid, setgid and sticky) as octal text, e.g. `0644`, `1777`.
function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0')
}
