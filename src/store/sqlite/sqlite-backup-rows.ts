// What rows a backup may carry into the live database: each checked against the rules the service
// writes by (the API's, from schemas.ts; a key's grants, from key-grants.ts), and what the service
// derives from rows (statistics, sequences, per-key record counts) rebuilt from them, never trusted.
import { randomBytes } from 'node:crypto'
import type BetterSqlite3 from 'better-sqlite3'
import { isInt64 } from '../../int64.js'
import { MAX_RATE_LIMIT_PER_MINUTE } from '../../key-grants.js'
import { NewPet } from '../../schemas.js'
import { SQLITE_STATISTICS } from './sqlite-schema-check.js'

/** One column's rule: what a value must be (for the message), and the test, on a value read with safe integers. */
interface ColumnRule {
  column: string
  must: string
  valid: (value: unknown) => boolean
}

const NAME = NewPet.properties.name
const NAME_PATTERN = new RegExp(NAME.pattern ?? '', 'u')

// NewPet's name: length in code points (as Ajv counts), then the pattern. A string of more than twice
// the longest name's UTF-16 units is too long whatever it holds, and is not spread into code points.
function isPetName(value: unknown): boolean {
  const [min = 0, max = 0] = [NAME.minLength, NAME.maxLength]
  if (typeof value !== 'string' || value.length > 2 * max) return false
  const length = [...value].length
  return length >= min && length <= max && NAME_PATTERN.test(value)
}

// An SQLite integer is a 64-bit one; read in safe-integer mode it is a bigint, and only then.
const isInteger = (value: unknown): boolean => typeof value === 'bigint' && isInt64(value)

/**
 * The rules per table, for the columns that exist in the backup (one made before a migration lacks
 * its columns). `pets` follows NewPet (docs/specification.md, NewPet): name length in code points and
 * pattern, categoryId an int64; the rest are what the service's own code writes. What the schema's
 * CHECK constraints hold (a status of PetStatus, a scope, a rate limit not below 0) integrity_check
 * has verified before these run (sqlite-backup.ts).
 */
const ROW_RULES: Readonly<Record<string, readonly ColumnRule[]>> = {
  pets: [
    {
      column: 'name',
      must: `be text of ${NAME.minLength} to ${NAME.maxLength} characters, one of them not whitespace, with no NUL or unpaired surrogate`,
      valid: isPetName,
    },
    { column: 'category_id', must: 'be an integer (int64)', valid: isInteger },
  ],
  api_keys: [
    {
      column: 'rate_limit',
      must: `be null or an integer from 0 to ${MAX_RATE_LIMIT_PER_MINUTE}`,
      valid: (value) =>
        value === null || (isInteger(value) && (value as bigint) >= 0n && (value as bigint) <= MAX_RATE_LIMIT_PER_MINUTE),
    },
  ],
  idempotency_keys: [
    { column: 'created_at', must: 'be an integer (ms since the Unix epoch)', valid: isInteger },
    { column: 'pet_id', must: 'be null or an integer (int64)', valid: (value) => value === null || isInteger(value) },
  ],
}

/**
 * Refuses the database `db` (a private copy of the backup at `path`) when a row breaks ROW_RULES:
 * throws an Error naming, per table, the first such row by its rowid, the column and its rule, and
 * how many rows of that table break a rule. Reads every row of the tables ROW_RULES names.
 */
export function checkBackupRows(db: BetterSqlite3.Database, path: string): void {
  const problems: string[] = []
  for (const [table, rules] of Object.entries(ROW_RULES)) {
    const present = new Set((db.pragma(`table_info(${table})`) as Array<{ name: string }>).map((column) => column.name))
    const checked = rules.filter((rule) => present.has(rule.column))
    if (checked.length === 0) continue
    const rows = db
      .prepare(`select rowid, ${checked.map((rule) => `"${rule.column}"`).join(', ')} from ${table}`)
      .raw()
      .safeIntegers()
    let first: string | undefined
    let bad = 0
    for (const [rowid, ...values] of rows.iterate() as Iterable<unknown[]>) {
      const broken = checked.find((rule, index) => !rule.valid(values[index]))
      if (broken === undefined) continue
      bad++
      first ??= `${table} rowid ${String(rowid)}: ${broken.column} must ${broken.must}`
    }
    if (first !== undefined) problems.push(bad === 1 ? first : `${first} (${bad} rows of ${table} break the rules)`)
  }
  if (problems.length > 0) {
    throw new Error(`${path} holds rows the service would not have written: ${problems.join('; ')} (nothing was changed)`)
  }
}

/**
 * Rebuilds, in the database `db` (a private copy of a backup that passed checkBackupRows), what the
 * service derives from rows instead of taking the backup's word for it, in one transaction:
 * - SQLite's statistics (sqlite_stat1, sqlite_stat4) are dropped, then made again by ANALYZE from
 *   the rows when the backup had any (an operator ran ANALYZE; the service never does);
 * - each AUTOINCREMENT table's sqlite_sequence entry is its largest id (none for an empty table);
 * - idempotency_key_counts (migration 0007), when the backup has it, is recounted from idempotency_keys;
 * - the header's user_version and application_id are 0, as the service leaves them;
 * - the `cursor` service secret is new: ids handed out after the backup are handed out again, to
 *   other pets, and an entity tag or cursor issued before the restore must not match them.
 */
export function rebuildDerivedRows(db: BetterSqlite3.Database): void {
  db.transaction(() => {
    const tables = db.prepare("select name, sql from sqlite_schema where type = 'table'").all() as Array<{
      name: string
      sql: string
    }>
    const has = (name: string) => tables.some((table) => table.name === name)
    const statistics = tables.filter((table) => SQLITE_STATISTICS.has(table.name))
    for (const { name } of statistics) db.exec(`drop table ${name}`)
    if (has('sqlite_sequence')) {
      db.exec('delete from sqlite_sequence')
      const insert = db.prepare('insert into sqlite_sequence (name, seq) values (?, ?)')
      for (const { name } of tables.filter((table) => /\bautoincrement\b/i.test(table.sql))) {
        const { largest } = db.prepare(`select max(rowid) as largest from "${name}"`).safeIntegers().get() as {
          largest: bigint | null
        }
        if (largest !== null) insert.run(name, largest)
      }
    }
    if (has('idempotency_key_counts')) {
      db.exec(`delete from idempotency_key_counts;
        insert into idempotency_key_counts (api_key_id, records) select api_key_id, count(*) from idempotency_keys group by api_key_id`)
    }
    if (has('service_secrets')) {
      // An upsert: a backup without the row must not restore into a database no start can load.
      db.prepare(
        "insert into service_secrets (name, value) values ('cursor', ?) on conflict (name) do update set value = excluded.value",
      ).run(randomBytes(32).toString('base64url'))
    }
    db.pragma('user_version = 0')
    db.pragma('application_id = 0')
    if (statistics.length > 0) db.exec('analyze')
  })()
}
