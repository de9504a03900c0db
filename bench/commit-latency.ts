// How long one createPet commit takes on this disk, outside HTTP: the insert the service runs, timed per commit.
import BetterSqlite3 from 'better-sqlite3'
import { median, percentile } from './stats.js'

/** Per-commit wall time in ms for one `synchronous` setting. */
export interface CommitLatency {
  synchronous: 'FULL' | 'NORMAL'
  commits: number
  medianMs: number
  p99Ms: number
}

/**
 * Opens the (migrated, otherwise idle) SQLite database at `path` as the service does (WAL journal, then the given
 * `synchronous`), and times `commits` single-row inserts into `pets`, each its own transaction, after a few
 * untimed ones. With WAL, FULL syncs the log to disk on every commit; NORMAL only at checkpoints.
 */
export function measureCommitLatency(path: string, synchronous: 'FULL' | 'NORMAL', commits: number): CommitLatency {
  const database = new BetterSqlite3(path)
  try {
    database.pragma('journal_mode = WAL')
    database.pragma(`synchronous = ${synchronous}`)
    const insert = database.prepare(
      "insert into pets (name, category_id, status) values ('commit-probe', 7, 'available') returning id, name, category_id, status",
    )
    for (let warmup = 0; warmup < 10; warmup++) insert.get()
    const times: number[] = []
    for (let commit = 0; commit < commits; commit++) {
      const start = process.hrtime.bigint()
      insert.get()
      times.push(Number(process.hrtime.bigint() - start) / 1e6)
    }
    times.sort((a, b) => a - b)
    return { synchronous, commits, medianMs: median(times), p99Ms: percentile(times, 99) }
  } finally {
    database.close()
  }
}
