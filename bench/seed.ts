// Seeding the bench databases straight through the drivers (not HTTP): `count` pets with mixed statuses, ids 1..count.
import BetterSqlite3 from 'better-sqlite3'
import pg from 'pg'

/** The statuses seeded pets get, in a fixed pseudo-random mix (about a third each). */
const STATUSES = ['available', 'pending', 'sold'] as const

/** The status of seeded pet `id` (a multiplicative hash, so statuses interleave along `id`). */
function statusOf(id: number): string {
  return STATUSES[(Math.imul(id, 2654435761) >>> 29) % 3] as string
}

/**
 * Inserts pets 1..count (name `pet-ID`, category `ID % 1000 + 1`, a mixed status) into the migrated, empty SQLite
 * database at `path`, in one transaction.
 */
export function seedSqlite(path: string, count: number): void {
  const database = new BetterSqlite3(path)
  try {
    const insert = database.prepare('insert into pets (id, name, category_id, status) values (?, ?, ?, ?)')
    database.transaction(() => {
      for (let id = 1; id <= count; id++) insert.run(id, `pet-${id}`, (id % 1000) + 1, statusOf(id))
    })()
  } finally {
    database.close()
  }
}

/**
 * Inserts pets 1..count as seedSqlite does into the migrated, empty PostgreSQL database at `url`, in one statement
 * (generate_series), then moves the identity past them and refreshes the planner's statistics.
 */
export async function seedPostgres(url: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(
      `insert into pets (id, name, category_id, status)
       select g, 'pet-' || g, g % 1000 + 1, (array['available', 'pending', 'sold'])[1 + (hashint4(g) & 2147483647) % 3]
       from generate_series(1, $1::int) as g`,
      [count],
    )
    await client.query(`select setval(pg_get_serial_sequence('pets', 'id'), $1::bigint)`, [count])
    await client.query('analyze pets')
  } finally {
    await client.end()
  }
}
