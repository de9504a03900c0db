// Pets on PostgreSQL: statements sent straight through the pg pool as unnamed prepared statements
// (no server-side state outlives a statement, so a transaction pooler such as PgBouncer is safe),
// with int8 columns read as decimal text.
import { createHash } from 'node:crypto'
import type pg from 'pg'
import type { Pet } from '../schemas.js'
import {
  claimedOutcome,
  createdResponse,
  findPetSql,
  type IdempotencyRecord,
  type IdempotentCreate,
  type IdempotentOutcome,
  idempotencySql,
  LIST_VARIANTS,
  type ListVariant,
  listPetsSql,
  listPetsVariant,
  overRecordLimit,
  type PetDraft,
  type PetStore,
  PROBE_WRITE_BYTES,
  probeWriteSql,
  type SqlDialect,
  storedPet,
} from './pets.js'

const POSTGRES: SqlDialect = { int64Text: (column) => `pets.${column}::text`, parameter: (index) => `$${index}` }

const FIND_PET = findPetSql(POSTGRES)
const INSERT_PET = 'insert into pets (name, category_id, status) values ($1, $2, $3) returning id::text as "id"'
const LIST_PETS = new Map<ListVariant, string>(LIST_VARIANTS.map((variant) => [variant, listPetsSql(POSTGRES, variant)]))

const IDEMPOTENCY = idempotencySql(POSTGRES, 'ctid', ' for update skip locked')

/**
 * The transaction-scoped advisory lock of one (API key, Idempotency-Key): a signed 64-bit number
 * from its SHA-256, as decimal text. Two keys sharing one only answer each other 409 for a moment.
 */
export function idempotencyLock(scope: string, key: string): string {
  return createHash('sha256').update(`${scope}\n${key}`).digest().readBigInt64BE(0).toString()
}

/**
 * createPet with an Idempotency-Key in one transaction: take the key's advisory lock without
 * waiting (held by another transaction: `in_flight`, the 409; a unique-index conflict would instead
 * wait for that transaction), claim the key, insert the pet, store the response, delete a few
 * expired records, commit.
 */
async function insertPetOnce(pool: pg.Pool, draft: PetDraft, once: IdempotentCreate): Promise<IdempotentOutcome> {
  const { scope, key, fingerprint, now, expiredBefore, maxRecords } = once
  const client = await pool.connect()
  let release: (error?: Error) => void = () => client.release()
  try {
    await client.query('begin')
    const locked = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1::bigint) as locked', [
      idempotencyLock(scope, key),
    ])
    if (!locked.rows[0]?.locked) {
      await client.query('rollback')
      return { outcome: 'in_flight' }
    }
    const claim = await client.query({
      text: IDEMPOTENCY.claim,
      values: [scope, key, fingerprint, now, expiredBefore],
    })
    if (claim.rowCount === 0) {
      const found = await client.query<IdempotencyRecord>({
        text: IDEMPOTENCY.find,
        values: [scope, key],
      })
      await client.query('rollback')
      return claimedOutcome(found.rows[0], fingerprint)
    }
    const held = await client.query<{ records: string }>({
      text: IDEMPOTENCY.count,
      values: [scope, maxRecords + 1],
    })
    if (overRecordLimit(held.rows[0]?.records, maxRecords)) {
      await client.query('rollback')
      return { outcome: 'limit_reached' }
    }
    const inserted = await client.query<{ id: string }>({
      text: INSERT_PET,
      values: [draft.name, String(draft.categoryId), draft.status],
    })
    const response = createdResponse(once, storedPet(draft, (inserted.rows[0] as { id: string }).id))
    await client.query({
      text: IDEMPOTENCY.respond,
      values: [response.status, response.location, response.body, scope, key],
    })
    await client.query({ text: IDEMPOTENCY.expire, values: [expiredBefore] })
    await client.query('commit')
    return { outcome: 'created', response }
  } catch (error) {
    // A connection that failed mid-transaction is discarded, not returned to the pool.
    release = () => client.release(error instanceof Error ? error : new Error(String(error)))
    throw error
  } finally {
    release()
  }
}

const PROBE = probeWriteSql(POSTGRES)

/** Readiness's probe write: insert and delete a PROBE_WRITE_BYTES row in one committed transaction. */
async function probeWrite(pool: pg.Pool): Promise<void> {
  const client = await pool.connect()
  let failed: Error | undefined
  try {
    await client.query('begin')
    await client.query(PROBE.insert, ['p'.repeat(PROBE_WRITE_BYTES)])
    await client.query(PROBE.remove)
    await client.query('commit')
  } catch (error) {
    failed = error instanceof Error ? error : new Error(String(error))
    throw error
  } finally {
    // A connection that failed mid-transaction is discarded, not returned to the pool.
    client.release(failed)
  }
}

/** A PetStore over a pg pool. Rejects with the driver's error as raised (store/index.ts classifies it). */
export function postgresPetStore(pool: pg.Pool): PetStore {
  return {
    insertPet: async (draft) => {
      const { rows } = await pool.query<{ id: string }>({
        text: INSERT_PET,
        values: [draft.name, String(draft.categoryId), draft.status],
      })
      return storedPet(draft, (rows[0] as { id: string }).id)
    },
    listPets: async (query) => {
      const { variant, parameters } = listPetsVariant(query)
      const values = parameters.map((value) => (typeof value === 'bigint' ? String(value) : value))
      return (await pool.query<Pet>({ text: LIST_PETS.get(variant) as string, values })).rows
    },
    findPet: async (id) => (await pool.query<Pet>({ text: FIND_PET, values: [String(id)] })).rows[0],
    insertPetOnce: (draft, once) => insertPetOnce(pool, draft, once),
    // One bounded statement in its own transaction; `for update skip locked` leaves rows that
    // instances sweeping at the same time, or a create taking over an expired key, hold.
    deleteExpiredIdempotencyRecords: async (expiredBefore, limit) =>
      (await pool.query({ text: IDEMPOTENCY.sweep, values: [expiredBefore, limit] })).rowCount ?? 0,
    probeWrite: () => probeWrite(pool),
  }
}
