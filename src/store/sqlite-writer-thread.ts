// The SQLite writer thread: its own connection to the database file, inserting the pets the main
// thread sends and group-committing them (group-commit.ts), so that the fsync of a commit blocks
// this thread, not the event loop that serves reads. Started by sqlite-writer.ts.
import { parentPort, workerData } from 'node:worker_threads'
import { groupCommit } from './group-commit.js'
import type { PetDraft } from './pets.js'
import { openSqlite } from './sqlite-connection.js'
import type { WriterReply, WriterRequest } from './sqlite-writer.js'

const port = parentPort
if (!port) throw new Error('sqlite-writer-thread.ts runs only as a worker thread')
const path = (workerData as { path: string }).path

// Opened and prepared on the first insert, and again after a failure (the table may not exist yet,
// the file may be unreachable): every failure is one insert's answer, never the thread's end.
let inserter: ((draft: PetDraft) => Promise<string>) | undefined
function prepareInserter(): (draft: PetDraft) => Promise<string> {
  const database = openSqlite(path)
  try {
    const statement = database.prepare('insert into pets (name, category_id, status) values (?, ?, ?)')
    const insertOne = (draft: PetDraft): string =>
      String(statement.run(draft.name, draft.categoryId, draft.status).lastInsertRowid)
    return groupCommit(
      database.transaction((drafts: PetDraft[]) => drafts.map(insertOne)),
      insertOne,
    )
  } catch (error) {
    database.close()
    throw error
  }
}

port.on('message', ({ seq, draft }: WriterRequest) => {
  let inserted: Promise<string>
  try {
    inserter ??= prepareInserter()
    inserted = inserter(draft)
  } catch (error) {
    inserted = Promise.reject(error)
  }
  inserted.then(
    (id) => port.postMessage({ seq, id } satisfies WriterReply),
    (error: unknown) => port.postMessage({ seq, error: describe(error) } satisfies WriterReply),
  )
})

// What crosses back to the main thread: the message and the driver's code (classified there).
function describe(error: unknown): { message: string; code: string | undefined } {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error
  const code = (error as { driverCode?: string }).driverCode ?? (cause as { code?: string }).code
  return { message: cause instanceof Error ? cause.message : String(cause), code }
}
