// What the SQLite writer thread loads: the built thread (dist/) started as a worker with a resolve
// hook that records every module it loads, so a query builder or schema library creeping back into
// its import graph (through any static or dynamic import, ESM or CommonJS) fails here.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { compilePetStatements } from '../src/store/pet-sql.js'
import type { WriterData } from '../src/store/sqlite-writer.js'
import { writeStatementTexts } from '../src/store/sqlite-writes.js'
import { assertBuilt, REPO_ROOT } from './cli-process.js'
import { tempDir } from './helpers.js'

// Runs in the worker, as a CommonJS script: the hook first, then the thread, then the list of every
// module URL resolved (the thread itself keeps listening, so the test terminates it).
const RECORDING_THREAD = `
const { registerHooks } = require('node:module')
const { parentPort, workerData } = require('node:worker_threads')
const loaded = []
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    loaded.push(resolved.url)
    return resolved
  },
})
import(workerData.thread).then(
  () => parentPort.postMessage({ loaded }),
  (error) => parentPort.postMessage({ error: String(error) }),
)
`

/** Every module URL the built writer thread resolves as it starts (plain Node: no TypeScript loader). */
async function writerThreadModules(): Promise<string[]> {
  assertBuilt()
  const dir = tempDir()
  const data: WriterData = { path: join(dir.path, 'imports.db'), statements: writeStatementTexts(compilePetStatements('sqlite')) }
  const thread = pathToFileURL(join(REPO_ROOT, 'dist/store/sqlite-writer-thread.js')).href
  const worker = new Worker(RECORDING_THREAD, { eval: true, execArgv: [], workerData: { ...data, thread } })
  try {
    const [reply] = (await once(worker, 'message')) as [{ loaded?: string[]; error?: string }]
    if (reply.error) throw new Error(`the writer thread failed to start: ${reply.error}`)
    return [...new Set(reply.loaded ?? [])]
  } finally {
    await worker.terminate()
    dir.remove()
  }
}

describe('the SQLite writer thread (dist/store/sqlite-writer-thread.js)', () => {
  it('loads better-sqlite3 and its own store modules, and neither kysely nor @sinclair/typebox', async () => {
    const modules = await writerThreadModules()
    // The hook saw the thread's real graph: without these, an empty list would pass the checks below.
    assert.ok(
      modules.some((url) => url.includes('/node_modules/better-sqlite3/')),
      `better-sqlite3 is loaded: ${modules.join(', ')}`,
    )
    assert.ok(
      modules.some((url) => url.endsWith('/dist/store/sqlite-writes.js')),
      'the writes module is loaded',
    )
    const builders = modules.filter((url) => /\/node_modules\/(kysely|@sinclair\/typebox)\//.test(url))
    assert.deepEqual(builders, [], 'no query builder or schema library in the writer thread')
    const appModules = modules.filter((url) => /\/dist\/(schemas|store\/pet-sql|store\/pet-columns)\.js$/.test(url))
    assert.deepEqual(appModules, [], 'none of the modules that build the SQL')
  })
})
