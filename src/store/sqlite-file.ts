// The SQLite file's place on disk: its folder created 0700 and the file itself 0600 before the driver
// opens it, so the data (and the API key hashes) are readable by the service's user alone.
import { closeSync, constants, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'

/** Mode of a data folder this creates: owner only (a umask can only remove bits). */
export const DATA_FOLDER_MODE = 0o700
/** Mode of a database file this creates; SQLite gives its -wal and -shm files the same mode. */
export const DATABASE_FILE_MODE = 0o600

/**
 * Creates the folders on the way to `path` (DATA_FOLDER_MODE) and the database file itself
 * (DATABASE_FILE_MODE) when they do not exist, whatever the process's umask. Existing folders and
 * files keep their modes: an operator may have chosen them. `:memory:` is left alone.
 * Throws the file system's error (EACCES, ENOSPC …).
 */
export function prepareSqliteFile(path: string): void {
  if (path === ':memory:') return
  mkdirSync(dirname(path), { recursive: true, mode: DATA_FOLDER_MODE })
  // O_CREAT without O_TRUNC: an existing database is opened and closed untouched.
  closeSync(openSync(path, constants.O_CREAT | constants.O_RDWR, DATABASE_FILE_MODE))
}
