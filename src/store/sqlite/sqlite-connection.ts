// Opening an SQLite connection with the service's settings; the request path's reader (index.ts) and
// the writer thread (sqlite-writer-thread.ts) open theirs the same way.
import BetterSqlite3 from 'better-sqlite3'
import { prepareSqliteFile } from './sqlite-file.js'

/**
 * Opens `path` (creating its folder 0700 and the file 0600, sqlite-file.ts), or an in-memory database for `:memory:`: WAL journal with
 * `synchronous=FULL` (a commit is on stable storage before it returns), a 5 s busy timeout, a 2 MiB
 * page cache, 64-bit integers read as bigint. Throws the driver's error if it cannot open.
 */
export function openSqlite(path: string): BetterSqlite3.Database {
  prepareSqliteFile(path)
  const database = new BetterSqlite3(path)
  // The busy timeout first: switching to WAL needs a lock another connection may hold for a moment.
  database.pragma('busy_timeout = 5000')
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  // SQLite's own default page cache (2 MiB) instead of better-sqlite3's 16 MiB: the OS page cache
  // serves the rest, and the process's memory stays flat while the database grows (docs/reliability.md).
  database.pragma('cache_size = -2000')
  database.defaultSafeIntegers(true)
  return database
}
