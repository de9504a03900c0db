// The SQLite writer thread: its own connection to the database file, running the creates the main
// thread sends (plain, or under an Idempotency-Key), group-committed (sqlite-writes.ts), so that the
// fsync of a commit blocks this thread, not the event loop that serves reads. Started by
// sqlite-writer.ts.
import { parentPort, workerData } from 'node:worker_threads'
import { openSqlite } from './sqlite-connection.js'
import type { WriterReply, WriterRequest } from './sqlite-writer.js'
import { createInserters, prepareWrites } from './sqlite-writes.js'

const port = parentPort
if (!port) throw new Error('sqlite-writer-thread.ts runs only as a worker thread')
const path = (workerData as { path: string }).path

// Opened and prepared on the first create, and again after a failure.
const inserters = createInserters(() => {
  const database = openSqlite(path)
  try {
    return prepareWrites(database)
  } catch (error) {
    database.close()
    throw error
  }
})

// One request's round trip on this side: run it, answer with its result or the driver's error.
async function answer(request: WriterRequest): Promise<WriterReply> {
  const { seq } = request
  try {
    if (request.kind === 'insert') return { kind: 'inserted', seq, id: await inserters.insertPet(request.draft) }
    return { kind: 'outcome', seq, outcome: await inserters.insertPetOnce(request.job) }
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
