// Pet inserts on SQLite, off the event loop: a worker thread (sqlite-writer-thread.ts) holds the one
// writing connection and group-commits, so a commit's fsync (synchronous=FULL) no longer stalls the
// reads this thread serves meanwhile. Each insert still resolves only after its commit.
import { Worker } from 'node:worker_threads'
import type { Pet } from '../schemas.js'
import { type PetDraft, storedPet } from './pets.js'

/** A message to the writer thread: insert `draft`, answer with `seq`. */
export interface WriterRequest {
  seq: number
  draft: PetDraft
}

/** The writer thread's answer: the new id (decimal text), or the error (message and driver code). */
export type WriterReply = { seq: number; id: string } | { seq: number; error: { message: string; code: string | undefined } }

/** Inserts on a writer thread; `close` stops the thread (call it once no insert is under way). */
export interface SqliteWriter {
  insertPet(draft: PetDraft): Promise<Pet>
  close(): Promise<void>
}

interface Pending {
  draft: PetDraft
  resolve: (pet: Pet) => void
  reject: (error: unknown) => void
}

/**
 * A writer for the SQLite file at `path` (not `:memory:`: a thread cannot share one). The thread
 * starts on the first insert (after migrations). Rejects an insert with an Error carrying the
 * driver's `code` (store/index.ts classifies it); if the thread dies (a bug: 500), everything under
 * way is rejected with its error and the next insert starts a new one.
 */
export function createSqliteWriter(path: string): SqliteWriter {
  let worker: Worker | undefined
  let seq = 0
  const pending = new Map<number, Pending>()
  const start = (): Worker => {
    const thread = new Worker(new URL('./sqlite-writer-thread.js', import.meta.url), { workerData: { path } })
    thread.on('message', (reply: WriterReply) => {
      const waiting = pending.get(reply.seq)
      if (!waiting) return
      pending.delete(reply.seq)
      if ('id' in reply) waiting.resolve(storedPet(waiting.draft, reply.id))
      else waiting.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }))
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
  return {
    insertPet: (draft) =>
      new Promise<Pet>((resolve, reject) => {
        worker ??= start()
        const id = ++seq
        pending.set(id, { draft, resolve, reject })
        worker.postMessage({ seq: id, draft } satisfies WriterRequest)
      }),
    close: async () => {
      const thread = worker
      worker = undefined
      await thread?.terminate()
    },
  }
}
