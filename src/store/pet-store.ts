// What the request path asks of the pets in the database, in domain terms: insert one (under an
// Idempotency-Key or not), one page of Pets, one Pet; and what keeps it healthy: the sweep of
// expired Idempotency-Key records, readiness's probe write. Bodies come back as JSON text, rendered
// by SQLite (pet-sql.ts) or from PostgreSQL's rows (pet-json.ts); nothing here knows HTTP.
import type { Int64Text } from '../int64.js'
import type { NewPet, PetStatus } from '../schemas.js'

/**
 * A pet to insert: the validated NewPet (its members come from the schema, so a new one flows
 * through unnamed) with the `status` default applied and `categoryId` exact. An optional member
 * the request left out is absent, and stored as NULL.
 */
export type PetDraft = Omit<NewPet, 'categoryId' | 'status'> & { categoryId: bigint; status: PetStatus }

/**
 * A point in the database's history that a read can be asked to include: PostgreSQL's WAL position
 * (bytes from 0/0). Only a store reading from replicas deals in them (postgres/read-routing.ts);
 * elsewhere every read sees every committed write, and positions are absent.
 */
export type Position = bigint

/**
 * One page of listPets: at most `limit` pets with `id > afterId`, optionally of one status, read
 * where at least `atLeast` is (a write's position, the previous page's).
 */
export interface PetPageQuery {
  limit: number
  status?: PetStatus | undefined
  afterId?: bigint | undefined
  atLeast?: Position | undefined
}

/**
 * One page: `json`, the Pets body (members in the Pet schema's order, int64 as exact digits);
 * `ids`, its pets' ids in order, comma-separated (pets never change, so they name the body);
 * `lastId`, the id of its last pet; `more`, whether pets follow it
 * (then a next page exists and `lastId` is set); `position`, when reads are routed, one at least as
 * late as everything the page saw (a next page read where at least that is never goes back in time).
 */
interface PetPage {
  json: string
  ids: string
  lastId: Int64Text | undefined
  more: boolean
  position?: Position | undefined
}

/**
 * A pet just created: its id and its Pet body, as the create's own transaction wrote it
 * (pet-sql.ts, `insert`), so the 201 needs no read after the commit (a read that could fail, and turn a
 * committed create into a 503 its client would retry).
 */
export interface CreatedPet {
  id: Int64Text
  body: string
  /** When reads are routed: a position at least as late as the create's commit (a read asking for it sees the pet). */
  position?: Position | undefined
}

/** The pets a route handler may read and write. Rejects with StoreUnavailableError when transient. */
export interface PetStore {
  /** Inserts one pet and resolves to it (its assigned `id` and its body) once the row is committed. */
  insertPet(draft: PetDraft): Promise<CreatedPet>
  /** One page ordered by `id` ascending (the keyset order of listPets; docs/specification.md). */
  listPets(query: PetPageQuery): Promise<PetPage>
  /** The Pet body of the pet with this `id`, or undefined; read where at least `atLeast` is. */
  findPet(id: bigint | Int64Text, atLeast?: Position): Promise<string | undefined>
  /**
   * Inserts one pet unless `once` names an Idempotency-Key already used: the key's record and the
   * pet are written in one transaction, so a pet never exists without its record nor a record
   * without its pet. Resolves to the pet created now, or the id of the one the first request with this key created,
   * `key_reused` when the key was used with another request, or `in_flight` when another
   * transaction holds the key now.
   */
  insertPetOnce(draft: PetDraft, once: IdempotentCreate): Promise<IdempotentOutcome>
  /**
   * Deletes at most `limit` idempotency records created before `expiredBefore` (ms since the epoch),
   * leaving alone rows another transaction holds; resolves to how many it deleted.
   */
  deleteExpiredIdempotencyRecords(expiredBefore: number, limit: number): Promise<number>
  /** A real write, committed, that leaves nothing behind (pet-sql.ts, `probeInsert`): readiness's probe. */
  probeWrite(): Promise<void>
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
  /** Most records the scope may hold (IDEMPOTENCY_RECORDS_PER_KEY); a new key past it evicts the scope's oldest record. */
  maxRecords: number
}

/**
 * What insertPetOnce did: created a pet (`evicted`: the API key's oldest record was deleted to keep
 * it within `maxRecords`), found the pet the same request created before (with, when reads are
 * routed, a position at least as late as its create's commit), or refused.
 */
export type IdempotentOutcome =
  | { outcome: 'created'; pet: CreatedPet; evicted: boolean }
  | { outcome: 'replayed'; petId: Int64Text; position?: Position | undefined }
  | { outcome: 'key_reused' | 'in_flight' }
