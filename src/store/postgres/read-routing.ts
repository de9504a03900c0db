// Reads across the PostgreSQL primary and its streaming replicas (DATABASE_REPLICA_URLS): which
// server serves a read, given the WAL position it must see at least; each replica's health (answers,
// in recovery, a copy of this primary, how far behind), checked every REPLICA_CHECK_INTERVAL_MS; the
// short wait for a replica to replay a position; the fall-back to the primary; and the position of a
// committed write. Only listPets and getPet come here: every write stays on the primary.
import type pg from 'pg'
import type { PetRow } from '../pet-json.js'
import type { CreatedPet, IdempotentOutcome, PetStore, Position } from '../pet-store.js'
import { isTransientDriverError } from '../unavailable.js'
import { withName } from './statement-names.js'

/** How often (ms) each process asks the primary for its position, and each replica for its state. */
export const REPLICA_CHECK_INTERVAL_MS = 250
/** How long (ms) one check of a replica may take before the replica counts as down. */
export const REPLICA_CHECK_TIMEOUT_MS = 1000
/** How often (ms) the replicas are asked for their position while a read waits for one to replay its own. */
export const WAIT_POLL_MS = 5

/** DATABASE_REPLICA_URLS, REPLICA_WAIT_MS and REPLICA_MAX_LAG_MS (README, Configuration). */
export interface ReplicaSettings {
  readonly urls: readonly string[]
  /** How long (ms) a read waits for a replica to replay the position it asks for, before going to the primary. */
  readonly waitMs: number
  /** How far behind the primary (ms) a replica may be and still serve reads. */
  readonly maxLagMs: number
}

/** A read statement as postgres-pets.ts runs it: its SQL text and its prepared statement's name. */
interface ReadStatement {
  sql: string
  name: string
}

/** Runs one read statement on one server (postgres-pets.ts `namedReads`), resolving to its rows, each an array of its columns. */
export type ServerRead = (statement: ReadStatement, values: unknown[]) => Promise<PetRow[]>

/** Runs one health-check statement on one server, resolving to its rows; rejects when the server does not answer in time. */
type HealthQuery = (text: string) => Promise<pg.QueryResultRow[]>

/** One server reads may go to: its read function, and how its health is asked. */
export interface ReadServer {
  read: ServerRead
  query: HealthQuery
}

/** The column every routed read's rows carry last: the WAL position its statement read at, at most (int8 text). */
const READ_POSITION = 'read_position'

/** A position read from a routed read's row (`rows[0]`, its last column), or undefined when there is no row. */
export function positionOf(row: PetRow | undefined): Position | undefined {
  const text = row?.at(-1)
  return text == null ? undefined : BigInt(text)
}

/** Why a read went to the primary although replicas are configured (`animal_store_replica_fallbacks_total`). */
type FallbackReason = 'unavailable' | 'wait' | 'error'

/** What the metrics read of the routing (src/http/observability/metrics.ts). */
export interface ReadStats {
  /** Reads the primary served. */
  primaryReads: number
  /** Reads sent to the primary, by why: no replica in rotation; none replayed the position within REPLICA_WAIT_MS; it failed on a replica. */
  fallbacks: Record<FallbackReason, number>
  replicas: Array<{
    /** `replica-N`, N its place in DATABASE_REPLICA_URLS from 1 (never its URL: that may hold a password). */
    name: string
    /** Reads it served. */
    reads: number
    /** How far behind the primary it is, at most (s): the time since the primary was last seen at a position it has replayed. */
    lagSeconds: number
    /** Whether it gets reads now. */
    serving: boolean
  }>
}

/**
 * A replica's first check's outcome, and then each time it enters or leaves the rotation, or the
 * reason it is out changes, for the log: `reason` says why it is out.
 */
export interface ReplicaChange {
  replica: string
  serving: boolean
  reason: string | undefined
}

/** Reads routed over the primary and its replicas. */
export interface ReadRouting {
  /**
   * Runs a read statement on a replica in rotation that has replayed `atLeast` (the replicas in
   * turn), waiting up to REPLICA_WAIT_MS for one to get there; else on the primary, and on the
   * primary again when it fails on a replica (a read is safe to repeat). Each row carries
   * READ_POSITION as its last column, a position at least as late as everything the statement saw
   * (positionOf). Rejects as the primary's read does.
   */
  read(statement: ReadStatement, values: unknown[], atLeast?: Position): Promise<PetRow[]>
  /** The primary's WAL position now: after a commit has returned, at least that commit's. */
  primaryPosition(): Promise<Position>
  stats(): ReadStats
  /** Stops the checks; reads waiting for a replica go to the primary. */
  close(): void
}

// The position as the number of bytes from 0/0: int8 text that BigInt reads exactly.
const POSITION = (lsn: string) => `(${lsn} - '0/0'::pg_lsn)::int8`
const PRIMARY_POSITION = POSITION('pg_current_wal_lsn()')
const REPLAY_POSITION = POSITION('pg_last_wal_replay_lsn()')
const PRIMARY_CHECK = `select ${PRIMARY_POSITION} as position, system_identifier::text as system from pg_control_system()`
const REPLICA_CHECK = `select pg_is_in_recovery() as recovering, ${REPLAY_POSITION} as position, system_identifier::text as system from pg_control_system()`
const PRIMARY_POSITION_STATEMENT = withName({ sql: `select ${PRIMARY_POSITION} as position` })

// A read statement with READ_POSITION added, evaluated during the statement, after its snapshot was
// taken: a replica's replay position (replay only moves forward), or the primary's written WAL
// position (every commit the snapshot sees was flushed before it became visible, and with
// synchronous_commit on, as this service runs, before its create was answered).
function positioned(statement: ReadStatement, position: string): ReadStatement {
  return withName({ sql: `select s.*, (select ${position}) as ${READ_POSITION} from (${statement.sql}) as s` })
}

/** One replica's state, as the last check and reads saw it. */
interface Replica extends ReadServer {
  name: string
  reads: number
  /** It answered the last check, and no read has failed to reach it since. */
  up: boolean
  /** Why it did not (the check's or the read's error), while it did not. */
  failure: string | undefined
  recovering: boolean
  /** Its system identifier (pg_control_system): a streaming replica has its primary's. */
  system: string | undefined
  /** The latest position it is known to have replayed. */
  replayed: Position
  /**
   * The latest time (ms, performance.now(): a clock that never jumps) the primary was seen at a
   * position it has replayed since.
   */
  caughtUpAt: number
  /** Why it got no reads at the last report (undefined: it got them), or unreported before its first check. */
  reported: string | undefined | typeof UNREPORTED
}

/** A replica's `reported` before its first check's outcome is reported. */
const UNREPORTED = Symbol('unreported')

interface Waiter {
  atLeast: Position
  resolve(replica: Replica | undefined): void
  timer: NodeJS.Timeout
}

/**
 * Routes reads over `primary` and the replica `servers` (named `replica-1`, … in their order); starts the
 * checks at once (a replica gets reads from its first good check on). `onChange` hears each replica
 * enter and leave the rotation.
 */
export function routeReads(
  primary: ReadServer,
  servers: readonly ReadServer[],
  settings: Pick<ReplicaSettings, 'waitMs' | 'maxLagMs'>,
  onChange: (change: ReplicaChange) => void = () => {},
): ReadRouting {
  const replicas: Replica[] = servers.map((server, index) => ({
    ...server,
    name: `replica-${index + 1}`,
    reads: 0,
    up: false,
    failure: undefined,
    recovering: false,
    system: undefined,
    replayed: -1n,
    caughtUpAt: Number.NEGATIVE_INFINITY,
    reported: UNREPORTED,
  }))
  // The primary's positions over the last REPLICA_MAX_LAG_MS and a little more, oldest first.
  const samples: Array<{ at: number; position: Position }> = []
  let primarySystem: string | undefined
  /** Why the primary's last check failed, while it fails. */
  let primaryFailure: string | undefined
  let primaryReads = 0
  const fallbacks: Record<FallbackReason, number> = { unavailable: 0, wait: 0, error: 0 }
  const onReplica = new Map<string, ReadStatement>()
  const onPrimary = new Map<string, ReadStatement>()
  const timers = new Set<NodeJS.Timeout>()
  let closed = false
  let turn = 0

  // Why the replica gets no reads now, or undefined when it is in the rotation: the one place that decides.
  const problemOf = (replica: Replica, now: number): string | undefined => {
    if (!replica.up) return replica.failure ?? 'not checked yet'
    if (!replica.recovering) return 'not in recovery: a primary, or a promoted replica'
    if (primarySystem === undefined) return `the primary's check failed: ${primaryFailure ?? 'not run yet'}`
    if (replica.system !== primarySystem) return 'not a replica of DATABASE_URL (another system identifier)'
    if (now - replica.caughtUpAt > settings.maxLagMs) {
      // Without the primary's position, a replica cannot be shown current (docs/deploying.md, Failover).
      const why = primaryFailure === undefined ? '' : ` (the primary's check fails: ${primaryFailure})`
      return `further behind the primary than REPLICA_MAX_LAG_MS${why}`
    }
    return undefined
  }
  const inRotation = (replica: Replica, now: number) => problemOf(replica, now) === undefined

  // The next replica in turn that is in rotation and has replayed `atLeast`.
  const pick = (now: number, atLeast: Position | undefined): Replica | undefined => {
    for (let tried = 0; tried < replicas.length; tried++) {
      const replica = replicas[turn++ % replicas.length] as Replica
      if (inRotation(replica, now) && (atLeast === undefined || replica.replayed >= atLeast)) return replica
    }
    return undefined
  }

  const replayedNow = (replica: Replica, position: Position | undefined) => {
    if (position === undefined || position <= replica.replayed) return
    replica.replayed = position
    for (let index = samples.length - 1; index >= 0; index--) {
      const sample = samples[index] as (typeof samples)[number]
      if (sample.position <= position) {
        if (sample.at > replica.caughtUpAt) replica.caughtUpAt = sample.at
        return
      }
    }
  }

  const checkPrimary = async () => {
    const at = performance.now()
    try {
      const row = (await primary.query(PRIMARY_CHECK))[0]
      primaryFailure = undefined
      primarySystem = String(row?.system)
      samples.push({ at, position: BigInt(row?.position) })
      // Kept: every sample younger than the lag bound, and the one before them.
      while (samples.length > 2 && (samples[1] as (typeof samples)[number]).at < at - settings.maxLagMs) samples.shift()
      // A replica already past this position has everything committed before `at`.
      for (const replica of replicas) {
        if (replica.replayed >= BigInt(row?.position) && at > replica.caughtUpAt) replica.caughtUpAt = at
      }
    } catch (error) {
      // The primary does not answer: no sample, so every replica's lag grows until it does.
      primaryFailure = error instanceof Error ? error.message : String(error)
    }
  }

  const checkReplica = async (replica: Replica) => {
    try {
      const row = (await replica.query(REPLICA_CHECK))[0]
      replica.up = true
      replica.failure = undefined
      replica.recovering = row?.recovering === true
      replica.system = String(row?.system)
      replayedNow(replica, row?.position == null ? undefined : BigInt(row.position))
    } catch (error) {
      replica.up = false
      replica.failure = `its check failed: ${error instanceof Error ? error.message : String(error)}`
    }
  }

  // The first check's outcome, then each change of the replica's place in the rotation or of why it
  // is out: a replica that never serves (a wrong URL or password, not a replica) is logged too.
  const report = (replica: Replica) => {
    const problem = problemOf(replica, performance.now())
    if (problem === replica.reported) return
    replica.reported = problem
    onChange({ replica: replica.name, serving: problem === undefined, reason: problem })
  }

  // Each server on a loop of its own: a replica that hangs delays no other's check. Resolves once
  // the first run is done.
  const every = (task: () => Promise<void>) => {
    const run = async () => {
      const started = performance.now()
      await task()
      if (closed) return
      const timer = setTimeout(
        () => {
          timers.delete(timer)
          void run()
        },
        Math.max(0, started + REPLICA_CHECK_INTERVAL_MS - performance.now()),
      )
      timer.unref()
      timers.add(timer)
    }
    return run()
  }
  // The replicas' checks start once the primary has answered (or failed) its first: a replica's
  // first outcome is then measured against the primary's position.
  void every(checkPrimary).then(() => {
    if (closed) return
    for (const replica of replicas)
      void every(async () => {
        await checkReplica(replica)
        report(replica)
      })
  })

  const waiters = new Set<Waiter>()
  let polling = false
  const poll = async () => {
    if (polling) return
    polling = true
    try {
      while (waiters.size > 0 && !closed) {
        await Promise.all(replicas.map((replica) => (replica.up ? checkReplica(replica) : undefined)))
        const now = performance.now()
        for (const waiter of waiters) {
          const replica = pick(now, waiter.atLeast)
          if (replica) settle(waiter, replica)
        }
        if (waiters.size > 0) await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS))
      }
    } finally {
      polling = false
    }
  }
  const settle = (waiter: Waiter, replica: Replica | undefined) => {
    clearTimeout(waiter.timer)
    waiters.delete(waiter)
    waiter.resolve(replica)
  }
  // The first replica in rotation to replay `atLeast` within REPLICA_WAIT_MS, or undefined.
  const replaying = (atLeast: Position) =>
    new Promise<Replica | undefined>((resolve) => {
      const waiter: Waiter = { atLeast, resolve, timer: setTimeout(() => settle(waiter, undefined), settings.waitMs) }
      waiters.add(waiter)
      void poll()
    })

  const statementOn = (cache: Map<string, ReadStatement>, statement: ReadStatement, position: string) => {
    let found = cache.get(statement.name)
    if (!found) {
      found = positioned(statement, position)
      cache.set(statement.name, found)
    }
    return found
  }

  return {
    async read(statement: ReadStatement, values: unknown[], atLeast?: Position) {
      const now = performance.now()
      let replica = pick(now, atLeast)
      if (!replica) {
        const someServing = replicas.some((each) => inRotation(each, now))
        if (atLeast !== undefined && someServing && settings.waitMs > 0) replica = await replaying(atLeast)
        if (!replica) fallbacks[someServing ? 'wait' : 'unavailable']++
      }
      if (replica) {
        try {
          const rows = await replica.read(statementOn(onReplica, statement, REPLAY_POSITION), values)
          replica.reads++
          replayedNow(replica, positionOf(rows[0]))
          return rows
        } catch (error) {
          fallbacks.error++
          // A conflict with recovery (40001, 40P01) cancels one query; the replica itself is fine.
          if (isTransientDriverError(error) && !/^40/.test(String((error as { code?: unknown }).code))) {
            replica.up = false
            replica.failure = `a read failed: ${error instanceof Error ? error.message : String(error)}`
            report(replica)
          }
        }
      }
      const rows = await primary.read(statementOn(onPrimary, statement, PRIMARY_POSITION), values)
      primaryReads++
      return rows
    },
    async primaryPosition() {
      const position = positionOf((await primary.read(PRIMARY_POSITION_STATEMENT, []))[0])
      if (position === undefined) throw new Error('no WAL position from the primary')
      return position
    },
    stats() {
      const now = performance.now()
      return {
        primaryReads,
        fallbacks: { ...fallbacks },
        replicas: replicas.map((replica) => ({
          name: replica.name,
          reads: replica.reads,
          lagSeconds: (now - replica.caughtUpAt) / 1000,
          serving: inRotation(replica, now),
        })),
      }
    },
    close() {
      closed = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      for (const waiter of waiters) settle(waiter, undefined)
    },
  }
}

/**
 * `pets` whose creates also resolve to the primary's position once committed (CreatedPet.position,
 * and a replay's `position`): a read that asks for at least it sees the pet. One statement more per
 * create, only when replicas are configured. A create whose position cannot be read (the primary
 * lost just after the commit) resolves without one rather than failing, a first create and a replay
 * alike: it is committed, and a failure would make its client create it again.
 */
export function withWritePositions(pets: PetStore, routing: Pick<ReadRouting, 'primaryPosition'>): PetStore {
  const position = () => routing.primaryPosition().catch(() => undefined)
  const positioned = async (pet: CreatedPet): Promise<CreatedPet> => ({ ...pet, position: await position() })
  return {
    ...pets,
    insertPet: async (draft) => positioned(await pets.insertPet(draft)),
    insertPetOnce: async (draft, once): Promise<IdempotentOutcome> => {
      const outcome = await pets.insertPetOnce(draft, once)
      if (outcome.outcome === 'created') return { ...outcome, pet: await positioned(outcome.pet) }
      if (outcome.outcome === 'replayed') return { ...outcome, position: await position() }
      return outcome
    },
  }
}
