// Pet creates on SQLite, off the event loop: a worker thread (sqlite-writer-thread.ts) holds the one
// writing connection and group-commits, so a commit's fsync (synchronous=FULL) no longer stalls the
// reads this thread serves meanwhile. Each create still resolves only after its commit.
import { Worker } from 'node:worker_threads'
import type { Pet } from '../schemas.js'
import { type IdempotentCreate, type IdempotentOutcome, type PetDraft, type PetStore, storedPet } from './pets.js'
import { type WriterCommit, writerEvents } from './sqlite-writer-events.js'

/**
 * A message to the writer thread, answered with `seq`: create `draft` (under `once`'s
 * Idempotency-Key, if given), delete a batch of expired idempotency records, or write readiness's probe.
 */
export type WriterRequest =
  | { seq: number; draft: PetDraft; once?: IdempotentCreate }
  | { seq: number; sweep: { expiredBefore: number; limit: number } }
  | { seq: number; probe: true }

/**
 * The writer thread's answer: the new id (decimal text), the idempotent create's outcome, or the
 * error (message and driver code).
 */
export type WriterReply =
  | { seq: number; id: string }
  | { seq: number; outcome: IdempotentOutcome }
  | { seq: number; deleted: number }
  | { seq: number; error: { message: string; code: string | undefined } }

/** Creates on a writer thread; `close` stops the thread (call it once no create is under way). */
export interface SqliteWriter
  extends Pick<PetStore, 'insertPet' | 'insertPetOnce' | 'deleteExpiredIdempotencyRecords' | 'probeWrite'> {
  close(): Promise<void>
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

interface Pending {
  resolve: (reply: WriterReply) => void
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
    thread.on('message', (reply: WriterReply | { commit: WriterCommit }) => {
      if ('commit' in reply) return writerEvents.committed(reply.commit)
      const waiting = pending.get(reply.seq)
      if (!waiting) return
      pending.delete(reply.seq)
      writerEvents.answered()
      if ('error' in reply) waiting.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }))
      else waiting.resolve(reply)
    })
    const fail = (error: Error) => {
      if (worker === thread) worker = undefined
      writerEvents.answered(pending.size)
      for (const waiting of pending.values()) waiting.reject(error)
      pending.clear()
    }
    thread.on('error', fail)
    thread.on('exit', (code) => {
      if (!closed) writerEvents.threadFailed()
      fail(new Error(`the SQLite writer thread exited (code ${code})`))
    })
    return thread
  }
  const send = (request: DistributiveOmit<WriterRequest, 'seq'>) =>
    new Promise<WriterReply>((resolve, reject) => {
      if (closed) throw new Error('the store is closed')
      worker ??= start()
      const id = ++seq
      pending.set(id, { resolve, reject })
      writerEvents.sent()
      worker.postMessage({ ...request, seq: id } satisfies WriterRequest)
    })
  return {
    insertPet: async (draft): Promise<Pet> => storedPet(draft, ((await send({ draft })) as { id: string }).id),
    insertPetOnce: async (draft, once) => ((await send({ draft, once })) as { outcome: IdempotentOutcome }).outcome,
    deleteExpiredIdempotencyRecords: async (expiredBefore, limit) =>
      ((await send({ sweep: { expiredBefore, limit } })) as { deleted: number }).deleted,
    probeWrite: async () => {
      await send({ probe: true })
    },
    close: async () => {
      closed = true
      const thread = worker
      worker = undefined
      await thread?.terminate()
    },
  }
}
