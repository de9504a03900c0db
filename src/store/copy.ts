// Copying every pet and API key from one database into another, exactly (ids, int64 values, key
// hashes, revoked keys), and the row counts and checksums that verify it. Either side may be SQLite
// or PostgreSQL: the rows travel through Kysely in id-ordered batches, so memory stays flat.
import { createHash } from 'node:crypto'
import { type Kysely, PostgresAdapter, sql } from 'kysely'
import type { Database } from './tables.js'

/** Rows per batch read (keyset on id): memory stays flat whatever the table's size. */
const COPY_BATCH_ROWS = 5000

/**
 * Most values bound by one multi-row insert: under SQLite's 32,766 and PostgreSQL's 65,535, so a
 * batch is inserted in as many statements as its column count needs (5000 rows × 6 columns fit one).
 */
const MAX_BOUND_VALUES = 30_000

/** The tables copied, in copy order. */
export type CopiedTable = 'pets' | 'api_keys'

/** One table's rows as verification sees them: `rows` counted by `count(*)`, `sha256` lowercase hex. */
interface TableSummary {
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

/** A copied table as the database has it: its columns, `id` first and the others by name. */
interface TableSpec {
  name: CopiedTable
  columns: readonly string[]
}

/**
 * The columns of `table` read from the database itself (Kysely's introspection), not from a list
 * here: a column a migration adds is copied and verified without an edit to this file.
 */
async function tableSpec(db: Kysely<Database>, name: CopiedTable): Promise<TableSpec> {
  const table = (await db.introspection.getTables()).find((candidate) => candidate.name === name)
  if (!table) throw new Error(`the database has no ${name} table`)
  const others = table.columns.map((column) => column.name).filter((column) => column !== 'id')
  return { name, columns: ['id', ...others.sort()] }
}

/** Fails, before anything is written, when `target` lacks a column of the source: its rows would lose it. */
async function assertTargetHolds(target: Kysely<Database>, table: TableSpec): Promise<void> {
  const held = new Set((await tableSpec(target, table.name)).columns)
  const missing = table.columns.filter((column) => !held.has(column))
  if (missing.length > 0) {
    throw new Error(
      `the target's ${table.name} table has no column ${missing.join(', ')}: run the release that added it on the target first`,
    )
  }
}

// A value as the checksum sees it: integers (bigint from better-sqlite3 in safe-integer mode, decimal
// text from pg's int8) as decimal text, text as itself, NULL as null; the same row then reads the same on both.
const canonical = (value: unknown): unknown => (typeof value === 'bigint' || typeof value === 'number' ? String(value) : value)

/**
 * Copies every pet and API key of `source` into `target`, both already migrated, and verifies the
 * result before committing. Ids and all columns are kept exactly; on PostgreSQL the identity
 * sequences are set past the largest id copied (or restarted at 1 for an empty table), so new rows
 * never collide. Reads happen in one read-only snapshot of the source; all writes happen in one
 * target transaction (PostgreSQL: tables locked EXCLUSIVE against concurrent writers), so the target
 * ends with the whole copy or unchanged.
 *
 * Throws TargetNotEmptyError when the target holds any pet or key and `replace` is false,
 * CopyVerificationError when the summaries (summarizeTables) of the two sides differ after copying, or
 * the driver's error; in each case the target is left as it was. `source` and `target` must be
 * different databases.
 */
export async function copyStore(source: Kysely<Database>, target: Kysely<Database>, options: CopyOptions): Promise<CopyResult> {
  const batchRows = options.batchRows ?? COPY_BATCH_ROWS
  return readSnapshot(source, async (from) => {
    const tables = { pets: await tableSpec(from, 'pets'), apiKeys: await tableSpec(from, 'api_keys') }
    const totals = { pets: await countRows(from, 'pets'), apiKeys: await countRows(from, 'api_keys') }
    return target.transaction().execute(async (to) => {
      for (const table of Object.values(tables)) await assertTargetHolds(to, table)
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
        pets: await copyTable(from, to, tables.pets, totals.pets, batchRows, options.onProgress),
        apiKeys: await copyTable(from, to, tables.apiKeys, totals.apiKeys, batchRows, options.onProgress),
      }
      if (isPostgres(to)) {
        for (const table of ['pets', 'api_keys'] as const) {
          // is_called = false for an empty table: the next id is then 1 itself.
          await sql`select setval(pg_get_serial_sequence(${table}, 'id'), greatest(max(id), 1), max(id) is not null)
                    from ${sql.table(table)}`.execute(to)
        }
      }
      const sourceSummary = await summarizeTables(from, tables, batchRows)
      const targetSummary = await summarizeTables(to, tables, batchRows)
      if (!sameTable(sourceSummary.pets, targetSummary.pets) || !sameTable(sourceSummary.apiKeys, targetSummary.apiKeys)) {
        throw new CopyVerificationError(sourceSummary, targetSummary)
      }
      return { copied, source: sourceSummary, target: targetSummary }
    })
  })
}

/**
 * Counts and checksums both tables of `db` over the source's columns, reading `batchRows` rows at a
 * time (memory stays flat). The checksum is SHA-256 over one line per row in id order: every column
 * of the source's table (`id` first, then the others in name order) as a JSON array, integers as
 * decimal strings and NULL as null, each line ending in "\n". The same rows give the same summary on
 * SQLite and PostgreSQL.
 */
async function summarizeTables(
  db: Kysely<Database>,
  tables: { pets: TableSpec; apiKeys: TableSpec },
  batchRows: number,
): Promise<StoreSummary> {
  return { pets: await summarizeTable(db, tables.pets, batchRows), apiKeys: await summarizeTable(db, tables.apiKeys, batchRows) }
}

async function summarizeTable(db: Kysely<Database>, table: TableSpec, batchRows: number): Promise<TableSummary> {
  const hash = createHash('sha256')
  for await (const batch of readBatches(db, table, batchRows)) {
    for (const row of batch) hash.update(`${JSON.stringify(table.columns.map((column) => canonical(row[column])))}\n`)
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
    const rowsPerInsert = Math.floor(MAX_BOUND_VALUES / table.columns.length)
    for (let start = 0; start < batch.length; start += rowsPerInsert) {
      await untyped(to)
        .insertInto(table.name)
        .values(batch.slice(start, start + rowsPerInsert))
        .execute()
    }
    copied += batch.length
    onProgress?.({ table: table.name, copied, total })
  }
  if (copied === 0) onProgress?.({ table: table.name, copied, total })
  return copied
}

/** The rows of `table` in id order, as the driver reads them, `batchRows` at a time (keyset on id). */
async function* readBatches(
  db: Kysely<Database>,
  table: TableSpec,
  batchRows: number,
): AsyncGenerator<Record<string, unknown>[]> {
  let afterId: unknown
  for (;;) {
    let query = untyped(db).selectFrom(table.name).select(table.columns).orderBy('id').limit(batchRows)
    if (afterId !== undefined) query = query.where('id', '>', afterId)
    const batch: Record<string, unknown>[] = await query.execute()
    if (batch.length > 0) yield batch
    if (batch.length < batchRows) return
    afterId = batch[batch.length - 1]?.id
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

// Both tables go through one loop whose columns are read from the database at run time, which
// Kysely's types cannot follow.
function untyped(db: Kysely<Database>): Kysely<any> {
  return db as unknown as Kysely<any>
}
