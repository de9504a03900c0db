// Copying every pet and API key from one database into another, exactly (ids, int64 values, key
// hashes, revoked keys), and the row counts and checksums that verify it. Either side may be SQLite
// or PostgreSQL: the rows travel through Kysely in id-ordered batches, so memory stays flat.
import { createHash } from 'node:crypto'
import { type Kysely, PostgresAdapter, sql } from 'kysely'
import type { Database } from './tables.js'

/**
 * Rows per batch read and per multi-row insert. 5000 rows × 6 columns (api_keys) = 30,000 bound
 * parameters: under SQLite's 32,766 and PostgreSQL's 65,535.
 */
export const COPY_BATCH_ROWS = 5000

/** The tables copied, in copy order. */
export type CopiedTable = 'pets' | 'api_keys'

/** One table's rows as verification sees them: `rows` counted by `count(*)`, `sha256` lowercase hex. */
export interface TableSummary {
  rows: number
  sha256: string
}

/** Both tables' summaries, for one side of a copy. */
export interface StoreSummary {
  pets: TableSummary
  apiKeys: TableSummary
}

/** Progress of a copy, reported after each batch: `copied` of `total` rows of `table` so far. */
export interface CopyProgress {
  table: CopiedTable
  copied: number
  total: number
}

/** What copyStore did: rows copied per table, and the (equal) summaries of both sides. */
export interface CopyResult {
  copied: { pets: number; apiKeys: number }
  source: StoreSummary
  target: StoreSummary
}

/** Options of copyStore. */
export interface CopyOptions {
  /** Empty the target's pets and api_keys first (same transaction). Without it a non-empty target is refused. */
  replace: boolean
  /** Called after every batch; must not throw. */
  onProgress?: (progress: CopyProgress) => void
  /** Rows per batch; defaults to COPY_BATCH_ROWS. */
  batchRows?: number
}

/** The target already holds rows and `replace` was not asked for. Nothing was changed. */
export class TargetNotEmptyError extends Error {
  constructor(pets: number, apiKeys: number) {
    super(`the target database is not empty (${pets} pets, ${apiKeys} API keys)`)
    this.name = 'TargetNotEmptyError'
  }
}

/** After copying, the target's counts or checksums differed from the source's. The copy was rolled back. */
export class CopyVerificationError extends Error {
  readonly source: StoreSummary
  readonly target: StoreSummary
  constructor(source: StoreSummary, target: StoreSummary) {
    const differing = (['pets', 'apiKeys'] as const).filter((table) => !sameTable(source[table], target[table]))
    super(
      `the target differs from the source in ${differing.map((table) => (table === 'pets' ? 'pets' : 'API keys')).join(' and ')}`,
    )
    this.name = 'CopyVerificationError'
    this.source = source
    this.target = target
  }
}

interface TableSpec {
  name: CopiedTable
  columns: readonly string[]
  /** The row as canonical values, in `columns` order: int64 as bigint, text as string, NULL as null. */
  canonical(row: Record<string, unknown>): unknown[]
}

// int64 columns arrive as bigint (better-sqlite3 in safe-integer mode) or as decimal strings (pg int8).
const int64 = (value: unknown): bigint => BigInt(value as bigint | string)
const text = (value: unknown): string => value as string

const PETS: TableSpec = {
  name: 'pets',
  columns: ['id', 'name', 'category_id', 'status'],
  canonical: (row) => [int64(row.id), text(row.name), int64(row.category_id), text(row.status)],
}

const API_KEYS: TableSpec = {
  name: 'api_keys',
  columns: ['id', 'name', 'prefix', 'hash', 'created_at', 'revoked_at'],
  canonical: (row) => [
    int64(row.id),
    text(row.name),
    text(row.prefix),
    text(row.hash),
    text(row.created_at),
    row.revoked_at === null ? null : text(row.revoked_at),
  ],
}

/**
 * Copies every pet and API key of `source` into `target`, both already migrated, and verifies the
 * result before committing. Ids and all columns are kept exactly; on PostgreSQL the identity
 * sequences are set past the largest id copied (or restarted at 1 for an empty table), so new rows
 * never collide. Reads happen in one read-only snapshot of the source; all writes happen in one
 * target transaction (PostgreSQL: tables locked EXCLUSIVE against concurrent writers), so the target
 * ends with the whole copy or unchanged.
 *
 * Throws TargetNotEmptyError when the target holds any pet or key and `replace` is false,
 * CopyVerificationError when the summaries (summarizeStore) of the two sides differ after copying, or
 * the driver's error; in each case the target is left as it was. `source` and `target` must be
 * different databases.
 */
export async function copyStore(source: Kysely<Database>, target: Kysely<Database>, options: CopyOptions): Promise<CopyResult> {
  const batchRows = options.batchRows ?? COPY_BATCH_ROWS
  return readSnapshot(source, async (from) => {
    const totals = { pets: await countRows(from, 'pets'), apiKeys: await countRows(from, 'api_keys') }
    return target.transaction().execute(async (to) => {
      if (isPostgres(to)) await sql`lock table pets, api_keys in exclusive mode`.execute(to)
      const existing = { pets: await countRows(to, 'pets'), apiKeys: await countRows(to, 'api_keys') }
      if (existing.pets + existing.apiKeys > 0) {
        if (!options.replace) throw new TargetNotEmptyError(existing.pets, existing.apiKeys)
        // Idempotency records name key and pet ids that the copy reassigns: a replay after it could
        // answer with another animal. They are not copied either (a retry after a move creates anew).
        await to.deleteFrom('idempotency_keys').execute()
        await to.deleteFrom('api_keys').execute()
        await to.deleteFrom('pets').execute()
      }
      const copied = {
        pets: await copyTable(from, to, PETS, totals.pets, batchRows, options.onProgress),
        apiKeys: await copyTable(from, to, API_KEYS, totals.apiKeys, batchRows, options.onProgress),
      }
      if (isPostgres(to)) {
        for (const table of ['pets', 'api_keys'] as const) {
          // is_called = false for an empty table: the next id is then 1 itself.
          await sql`select setval(pg_get_serial_sequence(${table}, 'id'), greatest(max(id), 1), max(id) is not null)
                    from ${sql.table(table)}`.execute(to)
        }
      }
      const sourceSummary = await summarizeStore(from, batchRows)
      const targetSummary = await summarizeStore(to, batchRows)
      if (!sameTable(sourceSummary.pets, targetSummary.pets) || !sameTable(sourceSummary.apiKeys, targetSummary.apiKeys)) {
        throw new CopyVerificationError(sourceSummary, targetSummary)
      }
      return { copied, source: sourceSummary, target: targetSummary }
    })
  })
}

/**
 * Counts and checksums both tables of `db`, reading `batchRows` rows at a time (memory stays flat).
 * The checksum is SHA-256 over one line per row in id order: the row's columns (pets: id, name,
 * category_id, status; api_keys: id, name, prefix, hash, created_at, revoked_at) as a JSON array,
 * int64 values as decimal strings and NULL as null, each line ending in "\n". The same rows give the
 * same summary on SQLite and PostgreSQL.
 */
export async function summarizeStore(db: Kysely<Database>, batchRows = COPY_BATCH_ROWS): Promise<StoreSummary> {
  return { pets: await summarizeTable(db, PETS, batchRows), apiKeys: await summarizeTable(db, API_KEYS, batchRows) }
}

async function summarizeTable(db: Kysely<Database>, table: TableSpec, batchRows: number): Promise<TableSummary> {
  const hash = createHash('sha256')
  for await (const batch of readBatches(db, table, batchRows)) {
    for (const values of batch) {
      hash.update(`${JSON.stringify(values, (_key, value) => (typeof value === 'bigint' ? value.toString() : value))}\n`)
    }
  }
  return { rows: await countRows(db, table.name), sha256: hash.digest('hex') }
}

async function copyTable(
  from: Kysely<Database>,
  to: Kysely<Database>,
  table: TableSpec,
  total: number,
  batchRows: number,
  onProgress: CopyOptions['onProgress'],
): Promise<number> {
  let copied = 0
  for await (const batch of readBatches(from, table, batchRows)) {
    const rows = batch.map((values) => Object.fromEntries(table.columns.map((column, index) => [column, values[index]])))
    await untyped(to).insertInto(table.name).values(rows).execute()
    copied += batch.length
    onProgress?.({ table: table.name, copied, total })
  }
  if (copied === 0) onProgress?.({ table: table.name, copied, total })
  return copied
}

/** The rows of `table` in id order, as canonical values, `batchRows` at a time (keyset on id). */
async function* readBatches(db: Kysely<Database>, table: TableSpec, batchRows: number): AsyncGenerator<unknown[][]> {
  let afterId: bigint | undefined
  for (;;) {
    let query = untyped(db).selectFrom(table.name).select(table.columns).orderBy('id').limit(batchRows)
    if (afterId !== undefined) query = query.where('id', '>', afterId)
    const batch = (await query.execute()).map(table.canonical)
    if (batch.length > 0) yield batch
    if (batch.length < batchRows) return
    afterId = batch[batch.length - 1]?.[0] as bigint
  }
}

/** Runs `read` in one consistent snapshot of `db`: read-only REPEATABLE READ on PostgreSQL; a read transaction on SQLite (WAL). */
async function readSnapshot<T>(db: Kysely<Database>, read: (snapshot: Kysely<Database>) => Promise<T>): Promise<T> {
  const transaction = isPostgres(db)
    ? db.transaction().setIsolationLevel('repeatable read').setAccessMode('read only')
    : db.transaction()
  return transaction.execute(read)
}

async function countRows(db: Kysely<Database>, table: CopiedTable): Promise<number> {
  const { rows } = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('rows'))
    .executeTakeFirstOrThrow()
  return Number(rows)
}

function sameTable(a: TableSummary, b: TableSummary): boolean {
  return a.rows === b.rows && a.sha256 === b.sha256
}

function isPostgres(db: Kysely<Database>): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter
}

// Both tables go through one loop whose columns are listed in TableSpec, which Kysely's types cannot
// follow; the specs above are the typed part.
function untyped(db: Kysely<Database>): Kysely<any> {
  return db as unknown as Kysely<any>
}
