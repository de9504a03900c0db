// The reference apps' pets table, as plain apps reach it: better-sqlite3 prepared statements (WAL, synchronous=FULL:
// an fsync per commit, as the service opens its file), or a `pg` Pool with plain `select … order by id limit $n`.
// int64 columns come back as bigint, so the JSON keeps their digits.

/** A pet row, members in the contract's order; `id` and `categoryId` are bigints. */
export type PetRow = { id: bigint; name: string; categoryId: bigint; status: string }

/** What a reference app asks of its database. */
export interface PetRows {
  /** Up to `limit` pets with an id above `afterId` (and `status` when given), by id. */
  list(afterId: bigint, status: string | undefined, limit: number): Promise<PetRow[]> | PetRow[]
  find(id: bigint): Promise<PetRow | undefined> | PetRow | undefined
  insert(name: string, categoryId: bigint | number, status: string): Promise<PetRow> | PetRow
}

/** How a PostgreSQL reference uses its pool: named (prepared once per connection) or unnamed statements, and its size. */
export interface PostgresOptions {
  named: boolean
  poolSize: number
}

const SELECT = 'select id, name, category_id as "categoryId", status from pets'
const RETURNING = 'returning id, name, category_id as "categoryId", status'

/**
 * Opens `location` (an SQLite file that must exist, or a postgres:// URL) and reads one row, so a wrong location or an
 * unmigrated database fails the start with the driver's message instead of the first request.
 */
export async function openPetRows(database: 'sqlite' | 'postgres', location: string, options: PostgresOptions): Promise<PetRows> {
  const rows = database === 'sqlite' ? await sqliteRows(location) : await postgresRows(location, options)
  await rows.list(0n, undefined, 1)
  return rows
}

async function sqliteRows(location: string): Promise<PetRows> {
  const { default: Database } = await import('better-sqlite3')
  const database = new Database(location, { fileMustExist: true })
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  const prepare = (sql: string) => database.prepare(sql).safeIntegers(true)
  const all = prepare(`${SELECT} where id > ? order by id limit ?`)
  const byStatus = prepare(`${SELECT} where status = ? and id > ? order by id limit ?`)
  const find = prepare(`${SELECT} where id = ?`)
  const insert = prepare(`insert into pets (name, category_id, status) values (?, ?, ?) ${RETURNING}`)
  return {
    list: (afterId, status, limit) =>
      (status === undefined ? all.all(afterId, limit) : byStatus.all(status, afterId, limit)) as PetRow[],
    find: (id) => find.get(id) as PetRow | undefined,
    insert: (name, categoryId, status) => insert.get(name, categoryId, status) as PetRow,
  }
}

async function postgresRows(location: string, { named, poolSize }: PostgresOptions): Promise<PetRows> {
  const { default: pg } = await import('pg')
  pg.types.setTypeParser(pg.types.builtins.INT8, BigInt)
  const pool = new pg.Pool({ connectionString: location, max: poolSize })
  // A pooled client's error (the server ends a connection) must not end the process.
  pool.on('error', () => {})
  const query = async (name: string, text: string, values: unknown[]) =>
    (await pool.query<PetRow>(named ? { name, text, values } : { text, values })).rows
  return {
    list: (afterId, status, limit) =>
      status === undefined
        ? query('all', `${SELECT} where id > $1 order by id limit $2`, [afterId, limit])
        : query('by-status', `${SELECT} where status = $1 and id > $2 order by id limit $3`, [status, afterId, limit]),
    find: async (id) => (await query('find', `${SELECT} where id = $1`, [id]))[0],
    insert: async (name, categoryId, status) =>
      (
        await query('insert', `insert into pets (name, category_id, status) values ($1, $2, $3) ${RETURNING}`, [
          name,
          categoryId,
          status,
        ])
      )[0] as PetRow,
  }
}
