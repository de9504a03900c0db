// Pets: what the request hot path asks of the database (insert one, list one page, find one) and the
// SQL both dialects share. Rows come back as Pet objects whose int64 columns are decimal text
// (src/int64.ts), so no BigInt is created per row and the digits go into JSON as they are.
import type { Int64Text } from '../int64.js'
import { petJson } from '../pet-json.js'
import type { Pet, PetStatus } from '../schemas.js'

/** A pet to insert: the validated NewPet with its default applied and `categoryId` exact. */
export interface PetDraft {
  name: string
  categoryId: bigint
  status: PetStatus
}

/** One page of listPets: at most `limit` pets with `id > afterId`, optionally of one status. */
export interface PetPageQuery {
  limit: number
  status?: PetStatus | undefined
  afterId?: bigint | undefined
}

/** The pets a route handler may read and write. Rejects with StoreUnavailableError when transient. */
export interface PetStore {
  /** Inserts one pet and resolves to it, with its assigned `id`, once the row is committed. */
  insertPet(draft: PetDraft): Promise<Pet>
  /** One page ordered by `id` ascending (the keyset order of listPets; docs/specification.md). */
  listPets(query: PetPageQuery): Promise<Pet[]>
  /** The pet with this `id`, or undefined. */
  findPet(id: bigint): Promise<Pet | undefined>
  /**
   * Inserts one pet unless `once` names an Idempotency-Key already used: the key's record and the
   * pet are written in one transaction, so a pet never exists without its record nor a record
   * without its pet. Resolves to the stored response (new or replayed), `key_reused` when the key
   * was used with another request, or `in_flight` when another transaction holds the key now.
   */
  insertPetOnce(draft: PetDraft, once: IdempotentCreate): Promise<IdempotentOutcome>
  /**
   * Deletes at most `limit` idempotency records created before `expiredBefore` (ms since the epoch),
   * leaving alone rows another transaction holds; resolves to how many it deleted.
   */
  deleteExpiredIdempotencyRecords(expiredBefore: number, limit: number): Promise<number>
  /** A real write, committed, that leaves nothing behind (probeWriteSql): readiness's probe. */
  probeWrite(): Promise<void>
}

/**
 * Bytes the probe write puts in its row: more than any create writes, so storage that takes the
 * probe's commit takes a create's; the few KB a failed commit leaves allocated cannot absorb it.
 */
export const PROBE_WRITE_BYTES = 65_536

/**
 * The probe write, run in one transaction: `insert` (one parameter, PROBE_WRITE_BYTES of text) adds a
 * row to service_secrets and `remove` deletes it again; the commit still writes every page touched.
 */
export function probeWriteSql(dialect: SqlDialect): { insert: string; remove: string } {
  return {
    insert: `insert into service_secrets (name, value) values ('write-probe', ${dialect.parameter(1)})`,
    remove: `delete from service_secrets where name = 'write-probe'`,
  }
}

/** The Idempotency-Key side of one createPet (README, "Behaviour where the specification is silent"). */
export interface IdempotentCreate {
  /** The authenticated API key's id: keys are scoped per API key. */
  scope: string
  /** The Idempotency-Key header as sent. */
  key: string
  /** SHA-256 (hex) of the canonical request; the same key with another fingerprint is refused. */
  fingerprint: string
  /** Now, in ms since the Unix epoch: the record's creation time. */
  now: number
  /** Records created before this (ms since the epoch) are expired: reused as new, and deleted. */
  expiredBefore: number
  /** Where created pets are read: the stored `Location` is this followed by the new id (`/v1/pets/`). */
  locationBase: string
  /** Most records the scope may hold (IDEMPOTENCY_RECORDS_PER_KEY); a new key past it is `limit_reached`. */
  maxRecords: number
}

/** The 201 a created pet gets, as stored for replays: `Location` and the Pet body (pet-json.ts). */
export function createdResponse(once: IdempotentCreate, pet: Pet): StoredResponse {
  return { status: 201, location: `${once.locationBase}${pet.id}`, body: petJson(pet) }
}

/** A createPet response as stored for replay: status, `Location` and the exact body text. */
export interface StoredResponse {
  status: number
  location: string
  body: string
}

/** What insertPetOnce did: created and stored, replayed a stored response, or refused. */
export type IdempotentOutcome =
  | { outcome: 'created' | 'replayed'; response: StoredResponse }
  | { outcome: 'key_reused' | 'in_flight' | 'limit_reached' }

/** Most expired idempotency records one insertPetOnce deletes: bounded work per request. */
export const EXPIRED_DELETE_BATCH = 16

/** The stored record of a key, as read back when it was already claimed. */
export interface IdempotencyRecord {
  request_hash: string
  response_status: number | bigint | null
  response_location: string | null
  response_body: string | null
}

/**
 * The outcome for a key that was already claimed (and not expired): its stored response when
 * `record` was made by the same request, else `key_reused`. A record without a response is
 * `in_flight` (the claim and the response are committed together, so only a reader inside a
 * transaction that has not committed could see one; treated safely all the same).
 */
export function claimedOutcome(record: IdempotencyRecord | undefined, fingerprint: string): IdempotentOutcome {
  if (!record || record.response_body === null || record.response_location === null || record.response_status === null) {
    return { outcome: 'in_flight' }
  }
  if (record.request_hash !== fingerprint) return { outcome: 'key_reused' }
  return {
    outcome: 'replayed',
    response: { status: Number(record.response_status), location: record.response_location, body: record.response_body },
  }
}

/**
 * Whether a scope that just claimed a new record now holds more than `maxRecords` (the count
 * `count` returned, read with its limit at maxRecords + 1): the claim is then undone and the create
 * refused, so no key is ever accepted without its record.
 */
export function overRecordLimit(records: number | bigint | string | undefined, maxRecords: number): boolean {
  return Number(records ?? 0) > maxRecords
}

/**
 * SQL of the idempotency record statements, numbered parameters written by `parameter`:
 * `claim` (scope, key, fingerprint, now, expiredBefore) inserts the record, or takes over an
 * expired one, returning a row only when this request now owns the key; `respond` (status,
 * location, body, scope, key) fills in the response; `find` (scope, key) reads it back; `expire`
 * (expiredBefore) deletes at most EXPIRED_DELETE_BATCH expired records (`rowKey` names the row: rowid, ctid;
 * `lockRows`, PostgreSQL's ` for update skip locked`, leaves rows another transaction holds to it, so two
 * creates never wait on each other's expired rows).
 */
export function idempotencySql(dialect: SqlDialect, rowKey: string, lockRows = '') {
  const p = dialect.parameter
  return {
    claim: `insert into idempotency_keys (api_key_id, idempotency_key, request_hash, created_at) values (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)})
      on conflict (api_key_id, idempotency_key) do update set request_hash = excluded.request_hash, created_at = excluded.created_at,
      response_status = null, response_location = null, response_body = null
      where idempotency_keys.created_at < ${p(5)} returning 1 as claimed`,
    respond: `update idempotency_keys set response_status = ${p(1)}, response_location = ${p(2)}, response_body = ${p(3)} where api_key_id = ${p(4)} and idempotency_key = ${p(5)}`,
    find: `select request_hash, response_status, response_location, response_body from idempotency_keys where api_key_id = ${p(1)} and idempotency_key = ${p(2)}`,
    expire: `delete from idempotency_keys where ${rowKey} in (select ${rowKey} from idempotency_keys where created_at < ${p(1)} limit ${EXPIRED_DELETE_BATCH}${lockRows})`,
    // (expiredBefore, limit): the background sweep's bounded batch (idempotency-sweeper.ts).
    sweep: `delete from idempotency_keys where ${rowKey} in (select ${rowKey} from idempotency_keys where created_at < ${p(1)} limit ${p(2)}${lockRows})`,
    // (scope, maxRecords + 1): the scope's records, counted no further than one past the limit, on the
    // primary key's index alone, so the cost is bounded by the limit, not by the table.
    count: `select count(*) as records from (select 1 from idempotency_keys where api_key_id = ${p(1)} limit ${p(2)}) as held`,
    // (scope, key): undoes this transaction's own claim when it went past the limit.
    release: `delete from idempotency_keys where api_key_id = ${p(1)} and idempotency_key = ${p(2)}`,
  }
}

/** How a dialect writes an int64 column as decimal text, and a numbered parameter. */
export interface SqlDialect {
  int64Text(column: string): string
  parameter(index: number): string
}

/** The four listPets statements: with or without a status filter, with or without a cursor. */
export type ListVariant = `${'all' | 'status'}-${'first' | 'after'}`

function selection(dialect: SqlDialect): string {
  return `select ${dialect.int64Text('id')} as "id", name as "name", ${dialect.int64Text('category_id')} as "categoryId", status as "status" from pets`
}

/** SQL of one listPets variant; parameters in order: status (if filtered), afterId (if after), limit. */
export function listPetsSql(dialect: SqlDialect, variant: ListVariant): string {
  const [filter, page] = variant.split('-')
  const conditions: string[] = []
  let index = 0
  if (filter === 'status') conditions.push(`status = ${dialect.parameter(++index)}`)
  if (page === 'after') conditions.push(`pets.id > ${dialect.parameter(++index)}`)
  const where = conditions.length > 0 ? ` where ${conditions.join(' and ')}` : ''
  // `pets.id`, not `id`: the selected alias `id` is text, and ordering by it would sort text.
  return `${selection(dialect)}${where} order by pets.id limit ${dialect.parameter(++index)}`
}

/** The variant and its parameters (status, afterId, limit, as present) for a page query. */
export function listPetsVariant(query: PetPageQuery): { variant: ListVariant; parameters: Array<string | bigint | number> } {
  const parameters: Array<string | bigint | number> = []
  if (query.status !== undefined) parameters.push(query.status)
  if (query.afterId !== undefined) parameters.push(query.afterId)
  parameters.push(query.limit)
  const variant: ListVariant = `${query.status !== undefined ? 'status' : 'all'}-${query.afterId !== undefined ? 'after' : 'first'}`
  return { variant, parameters }
}

/** SQL of findPet; one parameter, the id. */
export function findPetSql(dialect: SqlDialect): string {
  return `${selection(dialect)} where pets.id = ${dialect.parameter(1)}`
}

/** The listPets variants, for preparing them all up front. */
export const LIST_VARIANTS: readonly ListVariant[] = ['all-first', 'all-after', 'status-first', 'status-after']

/** The Pet a draft became once stored with `id`. */
export function storedPet(draft: PetDraft, id: Int64Text): Pet {
  return { id, name: draft.name, categoryId: String(draft.categoryId), status: draft.status }
}
