// What the built service loads, where memory is at stake: each case runs dist/ code in a worker
// whose resolve hook records every module resolved (static or dynamic import, ESM or CommonJS), so
// a heavy dependency creeping back into a thread that does not need it fails here. Plain Node runs
// the worker (no TypeScript loader), as `npm start` does.
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { tempDir } from '../scripts/lib/test-server.js'
import { compilePetStatements } from '../src/store/pet-sql.js'
import type { WriterData } from '../src/store/sqlite/sqlite-writer.js'
import { writeStatementTexts } from '../src/store/sqlite/sqlite-writes.js'
import { assertBuilt, REPO_ROOT } from './support/cli-process.js'

// Runs in the worker, as a CommonJS script: the hook first, then `workerData.module`, then (with
// `workerData.sqlite`) an SQLite store opened on that path, migrated, given one pet and closed; then
// the list of every module URL this thread resolved and of the built-in modules it loaded (Node's
// own process.moduleLoadList). A writer thread keeps listening once loaded, so the test terminates
// the worker.
const RECORDING_THREAD = `
const { registerHooks } = require('node:module')
const { parentPort, workerData } = require('node:worker_threads')
const loaded = new Set()
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context)
    loaded.add(resolved.url)
    return resolved
  },
})
import(workerData.module)
  .then(async (module) => {
    if (workerData.sqlite) {
      const store = await module.openStore({ dialect: 'sqlite', path: workerData.sqlite })
      try {
        await store.migrate()
        await store.pets.insertPet({ name: 'p', categoryId: 1n, status: 'available' })
      } finally {
        await store.close()
      }
    }
    parentPort.postMessage({ loaded: [...loaded], builtins: process.moduleLoadList })
  })
  .catch((error) => parentPort.postMessage({ error: String(error) }))
`

/** Every module URL the worker resolved running `module` (a dist/ path) with `workerData`, then the built-in modules it loaded. */
async function modulesLoaded(module: string, workerData: object): Promise<string[]> {
  assertBuilt()
  const url = pathToFileURL(join(REPO_ROOT, 'dist', module)).href
  const worker = new Worker(RECORDING_THREAD, { eval: true, execArgv: [], workerData: { ...workerData, module: url } })
  try {
    const [reply] = (await once(worker, 'message')) as [{ loaded?: string[]; builtins?: string[]; error?: string }]
    if (reply.error) throw new Error(`${module} failed: ${reply.error}`)
    return [...(reply.loaded ?? []), ...(reply.builtins ?? [])]
  } finally {
    await worker.terminate()
  }
}

const packages = (modules: string[], names: RegExp) => modules.filter((url) => names.test(url))

describe('the SQLite writer thread (dist/store/sqlite/sqlite-writer-thread.js)', () => {
  it('loads better-sqlite3 and its own store modules, and neither kysely nor @sinclair/typebox', async () => {
    const dir = tempDir()
    try {
      const data: WriterData = {
        path: join(dir.path, 'writer.db'),
        statements: writeStatementTexts(compilePetStatements('sqlite')),
      }
      const modules = await modulesLoaded('store/sqlite/sqlite-writer-thread.js', data)
      // The hook saw the thread's real graph: without these, an empty list would pass the checks below.
      assert.ok(
        packages(modules, /\/node_modules\/better-sqlite3\//).length > 0,
        `better-sqlite3 is loaded: ${modules.join(', ')}`,
      )
      assert.ok(packages(modules, /\/dist\/store\/sqlite\/sqlite-writes\.js$/).length > 0, 'the writes module is loaded')
      assert.deepEqual(
        packages(modules, /\/node_modules\/(kysely|@sinclair\/typebox)\//),
        [],
        'no query builder or schema library',
      )
      assert.deepEqual(
        packages(modules, /\/dist\/(schemas|store\/pet-sql|store\/pet-columns)\.js$/),
        [],
        'none of the modules that build the SQL',
      )
    } finally {
      dir.remove()
    }
  })
})

describe('a store opened on SQLite (dist/store/index.js)', () => {
  it('loads better-sqlite3 and never pg, not even once it has migrated and written', async () => {
    const dir = tempDir()
    try {
      const modules = await modulesLoaded('store/index.js', { sqlite: join(dir.path, 'store.db') })
      assert.ok(
        packages(modules, /\/node_modules\/better-sqlite3\//).length > 0,
        `better-sqlite3 is loaded: ${modules.join(', ')}`,
      )
      assert.deepEqual(packages(modules, /\/node_modules\/(pg|pg-[a-z-]+)\//), [], 'no PostgreSQL driver')
    } finally {
      dir.remove()
    }
  })
})

describe('the serve command (dist/commands/serve.js: the app, the metrics listener, the cluster)', () => {
  it('loads node:http without undici, which an ES import of node:http would load for its WebSocket exports', async () => {
    const modules = await modulesLoaded('commands/serve.js', {})
    assert.ok(packages(modules, /^NativeModule http$/).length > 0, `node:http is loaded: ${modules.join(', ')}`)
    assert.deepEqual(packages(modules, /undici/), [], 'no undici')
  })
})
