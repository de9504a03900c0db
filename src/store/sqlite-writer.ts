// Pet creates on SQLite, off the event loop: a worker thread (sqlite-writer-thread.ts) holds the one
// writing connection and group-commits, so a commit's fsync (synchronous=FULL) no longer stalls the
// reads this thread serves meanwhile. Each create still resolves only after its commit.
import { Worker } from 'node:worker_threads'
import type { Int64Text } from '../int64.js'
import type { IdempotentCreate, IdempotentOutcome, PetDraft } from './pet-store.js'
import type { OnceJob } from './sqlite-writes.js'

/** A create for the writer thread: plain, or under an Idempotency-Key. */
export type WriterJob = { kind: 'insert'; draft: PetDraft } | { kind: 'insertOnce'; job: OnceJob }

/** A message to the writer thread: a job, answered with the same `seq`. */
export type WriterRequest = WriterJob & { seq: number }

/**
 * The writer thread's answer, tagged by `kind`: the new pet's id, the idempotent create's outcome,
 * or the failure as the driver raised it (message and code; classified on this side, once).
 */
export type WriterReply =
  | { kind: 'inserted'; seq: number; id: Int64Text }
  | { kind: 'outcome'; seq: number; outcome: IdempotentOutcome }
  | { kind: 'failed'; seq: number; message: string; code: string | undefined }

/** Creates on a writer thread; `close` stops the thread (call it once no create is under way). */
export interface SqliteWriter {
  insertPet(draft: PetDraft): Promise<Int64Text>
  insertPetOnce(draft: PetDraft, once: IdempotentCreate): Promise<IdempotentOutcome>
  close(): Promise<void>
  /** The thread now running, if any (started on the first create; tests end it to check the restart). */
  readonly thread: Worker | undefined
}

interface Pending {
  resolve: (reply: Exclude<WriterReply, { kind: 'failed' }>) => void
  reject: (error: unknown) => void
}

/**
 * A writer for the SQLite file at `path` (not `:memory:`: a thread cannot share one). The thread
 * starts on the first create (after migrations). Rejects a create with an Error carrying the
 * driver's `code` (store/index.ts classifies it); if the thread dies (a bug: 500), everything under
 * way is rejected with its error and the next create starts a new one. After `close`, creates are
 * refused.
 */
export function createSqliteWriter(path: string): SqliteWriter {
  let worker: Worker | undefined
  let closed = false
  let seq = 0
  const pending = new Map<number, Pending>()
  const start = (): Worker => {
    const thread = new Worker(new URL('./sqlite-writer-thread.js', import.meta.url), { workerData: { path } })
    thread.on('message', (reply: WriterReply) => {
      const waiting = pending.get(reply.seq)
      if (!waiting) return
      pending.delete(reply.seq)
      if (reply.kind === 'failed') waiting.reject(Object.assign(new Error(reply.message), { code: reply.code }))
      else waiting.resolve(reply)
    })
    const fail = (error: Error) => {
      if (worker === thread) worker = undefined
      for (const waiting of pending.values()) waiting.reject(error)
      pending.clear()
    }
    thread.on('error', fail)
    thread.on('exit', (code) => fail(new Error(`the SQLite writer thread exited (code ${code})`)))
    return thread
  }
  // One create's round trip to the thread and back: the one place a request crosses.
  const roundTrip = (job: WriterJob) =>
    new Promise<Exclude<WriterReply, { kind: 'failed' }>>((resolve, reject) => {
      if (closed) {
        reject(new Error('the store is closed'))
        return
      }
      worker ??= start()
      const id = ++seq
      pending.set(id, { resolve, reject })
      worker.postMessage({ ...job, seq: id } satisfies WriterRequest)
    })
  return {
    insertPet: async (draft) => {
      const reply = await roundTrip({ kind: 'insert', draft })
      if (reply.kind !== 'inserted') throw new Error(`the SQLite writer answered ${reply.kind} to an insert`)
      return reply.id
    },
    insertPetOnce: async (draft, once) => {
      const reply = await roundTrip({ kind: 'insertOnce', job: { draft, once } })
      if (reply.kind !== 'outcome') throw new Error(`the SQLite writer answered ${reply.kind} to an idempotent insert`)
      return reply.outcome
    },
    close: async () => {
      closed = true
      const thread = worker
      worker = undefined
      await thread?.terminate()
    },
    get thread() {
      return worker
    },
  }
}
