// The SQLite writer thread: its own connection to the database file, running the creates the main
// thread sends (plain, or under an Idempotency-Key) and group-committing them (group-commit.ts), so
// that the fsync of a commit blocks this thread, not the event loop that serves reads. Started by
// sqlite-writer.ts.
import { parentPort, workerData } from 'node:worker_threads'
import { groupCommit } from './group-commit.js'
import type { IdempotentOutcome, PetDraft } from './pets.js'
import { openSqlite } from './sqlite-connection.js'
import type { WriterReply, WriterRequest } from './sqlite-writer.js'
import { timedCommit, type WriterCommit } from './sqlite-writer-events.js'
import { type OnceJob, prepareWrites } from './sqlite-writes.js'

const port = parentPort
if (!port) throw new Error('sqlite-writer-thread.ts runs only as a worker thread')
const path = (workerData as { path: string }).path

interface Inserters {
  insertPet(draft: PetDraft): Promise<string>
  insertPetOnce(job: OnceJob): Promise<IdempotentOutcome>
  /** A batch of expired idempotency records, deleted at once (between group commits). */
  sweep(expiredBefore: number, limit: number): number
  probe(): void
}

// Opened and prepared on the first create, and again after a failure (the table may not exist yet,
// the file may be unreachable): every failure is one create's answer, never the thread's end.
let inserters: Inserters | undefined
function prepareInserters(): Inserters {
  const database = openSqlite(path)
  try {
    const writes = prepareWrites(database)
    // Each call below is one transaction; its duration goes to the main thread (sqlite-writer-events.ts).
    const report = (commit: WriterCommit) => parentPort?.postMessage({ commit })
    const many = (items: unknown[]) => items.length
    const one = () => 1
    return {
      insertPet: groupCommit(
        timedCommit((drafts: PetDraft[]) => writes.insertBatch(drafts).map((pet) => pet.id), many, report),
        timedCommit((draft: PetDraft) => writes.insertOne(draft).id, one, report),
      ),
      insertPetOnce: groupCommit(timedCommit(writes.insertOnceBatch, many, report), timedCommit(writes.insertOnce, one, report)),
      sweep: writes.sweep,
      probe: writes.probe,
    }
  } catch (error) {
    database.close()
    throw error
  }
}

function handle(request: WriterRequest, writes: Inserters): Promise<WriterReply> {
  const { seq } = request
  if ('probe' in request) {
    writes.probe()
    return Promise.resolve({ seq, deleted: 0 })
  }
  if ('sweep' in request) return Promise.resolve({ seq, deleted: writes.sweep(request.sweep.expiredBefore, request.sweep.limit) })
  if (request.once === undefined) return writes.insertPet(request.draft).then((id) => ({ seq, id }))
  return writes.insertPetOnce({ draft: request.draft, once: request.once }).then((outcome) => ({ seq, outcome }))
}

port.on('message', (request: WriterRequest) => {
  let done: Promise<WriterReply>
  try {
    inserters ??= prepareInserters()
    done = handle(request, inserters)
  } catch (error) {
    done = Promise.reject(error)
  }
  done.then(
    (reply) => port.postMessage(reply),
    (error: unknown) => port.postMessage({ seq: request.seq, error: describe(error) } satisfies WriterReply),
  )
})

// What crosses back to the main thread: the message and the driver's code (classified there).
function describe(error: unknown): { message: string; code: string | undefined } {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error
  const code = (error as { driverCode?: string }).driverCode ?? (cause as { code?: string }).code
  return { message: cause instanceof Error ? cause.message : String(cause), code }
}
