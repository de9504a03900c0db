// The names of PostgreSQL's prepared read statements (postgres-pets.ts `namedReads`): the hash of
// their SQL text, so that a name always means one text, whichever instance or release prepared it.
import { createHash } from 'node:crypto'

/** `statement` with its prepared statement's name: `animal_store_` and 32 hex digits of the SHA-256 of its SQL text. */
export function withName<S extends { sql: string }>(statement: S): S & { name: string } {
  return { ...statement, name: `animal_store_${createHash('sha256').update(statement.sql).digest('hex').slice(0, 32)}` }
}
