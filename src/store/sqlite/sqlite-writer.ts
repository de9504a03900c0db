// Pet creates on SQLite, off the event loop: a worker thread (sqlite-writer-thread.ts) holds the one
// writing connection and group-commits, so a commit's fsync (synchronous=FULL) no longer stalls the
// reads this thread serves meanwhile. Each create still resolves only after its commit.
import { Worker } from 'node:worker_threads'
import type { CreatedPet, IdempotentCreate, IdempotentOutcome, PetDraft } from '../pet-store.js'
import { type WriterCommit, writerEvents } from './sqlite-writer-events.js'
import { type OnceJob, type WriteStatements, type WriteStatementTexts, writeStatementTexts } from './sqlite-writes.js'

/** What the writer thread starts with (its workerData): the file's path and the SQL of its writes, as plain data. */
export interface WriterData {
  path: string
  statements: WriteStatementTexts
}

/**
 * A job for the writer thread: a create (plain, or under an Idempotency-Key), a batch of expired
 * idempotency records to delete, or readiness's probe write.
 */
type WriterJob =
  | { kind: 'insert'; draft: PetDraft }
  | { kind: 'insertOnce'; job: OnceJob }
  | { kind: 'sweep'; expiredBefore: number; limit: number }
  | { kind: 'probe' }

/** A message to the writer thread: a job, answered with the same `seq`. */
export type WriterRequest = WriterJob & { seq: number }

/**
 * The writer thread's answer, tagged by `kind`: the new pet's id, the idempotent create's outcome,
 * how many records a sweep deleted, the probe done, or the failure as the driver raised it (message
 * and code; classified on this side, once).
 */
export type WriterReply =
  | { kind: 'inserted'; seq: number; pet: CreatedPet }
  | { kind: 'outcome'; seq: number; outcome: IdempotentOutcome }
  | { kind: 'swept'; seq: number; deleted: number }
  | { kind: 'probed'; seq: number }
  | { kind: 'failed'; seq: number; message: string; code: string | undefined }

/** What the writer thread reports unasked: a commit's duration and rows (sqlite-writer-events.ts). */
export interface WriterCommitReport {
  kind: 'committed'
  commit: WriterCommit
}

/** Writes on a writer thread; `close` stops the thread (call it once no write is under way). */
export interface SqliteWriter {
  insertPet(draft: PetDraft): Promise<CreatedPet>
  insertPetOnce(draft: PetDraft, once: IdempotentCreate): Promise<IdempotentOutcome>
  /** Deletes at most `limit` records created before `expiredBefore` (ms); resolves to how many. */
  deleteExpiredIdempotencyRecords(expiredBefore: number, limit: number): Promise<number>
  /** Readiness's probe write, committed on the writer's connection. */
  probeWrite(): Promise<void>
  close(): Promise<void>
  /** The thread now running, if any (started on the first create; tests end it to check the restart). */
  readonly thread: Worker | undefined
}

function isKind<K extends WriterReply['kind']>(reply: WriterReply, kind: K): reply is Extract<WriterReply, { kind: K }> {
  return reply.kind === kind
}

interface Pending {
  resolve: (reply: Exclude<WriterReply, { kind: 'failed' }>) => void
  reject: (error: unknown) => void
}

/**
 * A writer for the SQLite file at `path` (not `:memory:`: a thread cannot share one), running
 * `statements` (SQLite's, compiled by pet-sql.ts; the thread gets their text). The thread
 * starts on the first job (after migrations). Rejects a create with an Error carrying the
 * driver's `code` (store/index.ts classifies it); if the thread dies (a bug: 500), everything under
 * way is rejected with its error and the next create starts a new one. After `close`, creates are
 * refused.
 */
export function createSqliteWriter(path: string, statements: WriteStatements): SqliteWriter {
  const state: WriterState = {
    workerData: { path, statements: writeStatementTexts(statements) },
    worker: undefined,
    closed: false,
    seq: 0,
    pending: new Map(),
  }
  // The reply of the kind `job` asks for; any other is a bug of the thread.
  const expect = async <K extends WriterReply['kind']>(job: WriterJob, kind: K): Promise<Extract<WriterReply, { kind: K }>> => {
    const reply = await roundTrip(state, job)
    if (!isKind(reply, kind)) throw new Error(`the SQLite writer answered ${reply.kind} to ${job.kind}`)
    return reply
  }
  return {
    insertPet: async (draft) => (await expect({ kind: 'insert', draft }, 'inserted')).pet,
    insertPetOnce: async (draft, once) => (await expect({ kind: 'insertOnce', job: { draft, once } }, 'outcome')).outcome,
    deleteExpiredIdempotencyRecords: async (expiredBefore, limit) =>
      (await expect({ kind: 'sweep', expiredBefore, limit }, 'swept')).deleted,
    probeWrite: async () => {
      await expect({ kind: 'probe' }, 'probed')
    },
    close: async () => {
      state.closed = true
      const thread = state.worker
      state.worker = undefined
      await thread?.terminate()
    },
    get thread() {
      return state.worker
    },
  }
}

/** The main thread's side of one writer: the thread running (if any), and the jobs awaiting its reply by `seq`. */
interface WriterState {
  readonly workerData: WriterData
  worker: Worker | undefined
  closed: boolean
  seq: number
  readonly pending: Map<number, Pending>
}

/** Starts a writer thread: its replies settle the pending jobs; its death rejects every one of them. */
function startThread(state: WriterState): Worker {
  const { pending } = state
  const thread = new Worker(new URL('./sqlite-writer-thread.js', import.meta.url), { workerData: state.workerData })
  thread.on('message', (reply: WriterReply | WriterCommitReport) => {
    if (reply.kind === 'committed') return writerEvents.committed(reply.commit)
    const waiting = pending.get(reply.seq)
    if (!waiting) return
    pending.delete(reply.seq)
    writerEvents.answered()
    if (reply.kind === 'failed') waiting.reject(Object.assign(new Error(reply.message), { code: reply.code }))
    else waiting.resolve(reply)
  })
  const fail = (error: Error) => {
    if (state.worker === thread) state.worker = undefined
    writerEvents.answered(pending.size)
    for (const waiting of pending.values()) waiting.reject(error)
    pending.clear()
  }
  thread.on('error', fail)
  thread.on('exit', (code) => {
    if (!state.closed) writerEvents.threadFailed()
    fail(new Error(`the SQLite writer thread exited (code ${code})`))
  })
  return thread
}

/** One job's round trip to the thread (started if none runs) and back: the one place a request crosses. */
function roundTrip(state: WriterState, job: WriterJob): Promise<Exclude<WriterReply, { kind: 'failed' }>> {
  return new Promise((resolve, reject) => {
    if (state.closed) {
      reject(new Error('the store is closed'))
      return
    }
    state.worker ??= startThread(state)
    const id = ++state.seq
    state.pending.set(id, { resolve, reject })
    writerEvents.sent()
    state.worker.postMessage({ ...job, seq: id } satisfies WriterRequest)
  })
}
