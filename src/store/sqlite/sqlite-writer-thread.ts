// The SQLite writer thread: its own connection to the database file, running the writes the main
// thread sends (creates, plain or under an Idempotency-Key, group-committed by sqlite-writes.ts; a
// sweep batch of expired records; readiness's probe write), so that the fsync of a commit blocks
// this thread, not the event loop that serves reads. Started by sqlite-writer.ts, which hands it the
// SQL Kysely compiled in the main thread: this thread loads no query builder and no schema library
// (test/loaded-modules.test.ts holds it to that).
import { parentPort, workerData } from 'node:worker_threads'
import { openSqlite } from './sqlite-connection.js'
import type { WriterCommitReport, WriterData, WriterReply, WriterRequest } from './sqlite-writer.js'
import { createInserters, prepareWrites, writeStatementsFrom } from './sqlite-writes.js'

const port = parentPort
if (!port) throw new Error('sqlite-writer-thread.ts runs only as a worker thread')
const data = workerData as WriterData
const statements = writeStatementsFrom(data.statements)

// Opened and prepared on the first job, and again after a failure. Each create transaction's
// duration goes to the main thread (sqlite-writer-events.ts).
const inserters = createInserters(
  () => {
    const database = openSqlite(data.path)
    try {
      return prepareWrites(database, statements)
    } catch (error) {
      database.close()
      throw error
    }
  },
  (commit) => port.postMessage({ kind: 'committed', commit } satisfies WriterCommitReport),
)

// One request's round trip on this side: run it, answer with its result or the driver's error.
async function answer(request: WriterRequest): Promise<WriterReply> {
  const { seq } = request
  try {
    switch (request.kind) {
      case 'insert':
        return { kind: 'inserted', seq, pet: await inserters.insertPet(request.draft) }
      case 'insertOnce':
        return { kind: 'outcome', seq, outcome: await inserters.insertPetOnce(request.job) }
      case 'sweep':
        return { kind: 'swept', seq, deleted: await inserters.sweep(request.expiredBefore, request.limit) }
      case 'probe':
        await inserters.probe()
        return { kind: 'probed', seq }
    }
  } catch (error) {
    const code = (error as { code?: unknown }).code
    return {
      kind: 'failed',
      seq,
      message: error instanceof Error ? error.message : String(error),
      code: typeof code === 'string' ? code : undefined,
    }
  }
}

port.on('message', (request: WriterRequest) => {
  void answer(request).then((reply) => port.postMessage(reply))
})
