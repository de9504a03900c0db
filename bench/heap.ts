// `tsx bench/heap.ts [sqlite|postgres]`: what fills the service's memory at its peak. The service as `npm start` runs
// it, on a seeded database, under the bench's mixed load (scenario g) for 10 s; at the end of the load Node writes a
// heap snapshot (--heapsnapshot-signal), and this prints the peak RSS, the JavaScript heap the snapshot holds, and the
// kinds of objects that hold most of it (docs/benchmarks.md, Memory).
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { postgresDatabase, sqliteDatabase } from './databases.js'
import { killChildren, readMemory, startServer } from './processes.js'
import { AUTHORIZATION, collectPools, SCENARIOS, SEEDED_PETS } from './scenarios.js'
import { programOf } from './servers.js'
import { runWrk } from './wrk.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** How many kinds of objects the summary lists. */
const TOP = 12
/** How long (ms) Node may take to write the snapshot. */
const SNAPSHOT_TIMEOUT_MS = 60_000

/** The self size (bytes) and count of the objects of each constructor (or string, code, …) in a V8 heap snapshot. */
function heapByKind(snapshot: {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } }
  nodes: number[]
  strings: string[]
}): Map<string, { bytes: number; count: number }> {
  const fields = snapshot.snapshot.meta.node_fields
  const [types] = snapshot.snapshot.meta.node_types
  const width = fields.length
  const [type, name, size] = ['type', 'name', 'self_size'].map((field) => fields.indexOf(field)) as [number, number, number]
  const kinds = new Map<string, { bytes: number; count: number }>()
  for (let node = 0; node < snapshot.nodes.length; node += width) {
    const kind = types[snapshot.nodes[node + type] as number] as string
    // Objects by their constructor; everything else (strings, code, arrays' backing stores) by its type.
    const label =
      kind === 'object' || kind === 'closure' ? `${kind} ${snapshot.strings[snapshot.nodes[node + name] as number]}` : kind
    const entry = kinds.get(label) ?? { bytes: 0, count: 0 }
    entry.bytes += snapshot.nodes[node + size] as number
    entry.count += 1
    kinds.set(label, entry)
  }
  return kinds
}

async function main(): Promise<void> {
  const databaseName = process.argv[2] ?? 'sqlite'
  const tmp = mkdtempSync(join(tmpdir(), 'animal-store-heap-'))
  const node = join(ROOT, 'node_modules/.bin/node')
  const database =
    databaseName === 'postgres'
      ? await postgresDatabase(node, ROOT, SEEDED_PETS)
      : await sqliteDatabase(node, ROOT, tmp, SEEDED_PETS)
  try {
    // The service exactly as the bench starts it (npm start's options), plus the snapshot's signal and folder.
    const { argv, env } = programOf('service', database, { node, references: tmp })
    const [program = node, ...options] = argv
    const server = await startServer(
      'service',
      [program, '--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${tmp}`, ...options],
      env,
      join(tmp, 'service.out'),
    )
    try {
      const mixed = SCENARIOS.find((scenario) => scenario.id === 'g')
      if (!mixed) throw new Error('no scenario g')
      const load = runWrk({
        origin: server.origin,
        kinds: mixed.kinds(await collectPools(server.origin)),
        authorization: AUTHORIZATION,
        connections: 64,
        durationS: 10,
        dir: tmp,
        prefix: [],
        seed: 1,
      })
      await sleep(9_000)
      process.kill(server.pid, 'SIGUSR2')
      const measured = await load
      const peak = readMemory(server.pid)
      // Node writes the snapshot synchronously on its main thread; it is whole once its size stops growing.
      let file: string | undefined
      const deadline = Date.now() + SNAPSHOT_TIMEOUT_MS
      for (let last = -1; ; await sleep(500)) {
        file = readdirSync(tmp).find((name) => name.endsWith('.heapsnapshot'))
        const size = file ? statSync(join(tmp, file)).size : -1
        if (file && size === last && size > 0) break
        if (Date.now() > deadline) throw new Error(`no whole heap snapshot within ${SNAPSHOT_TIMEOUT_MS} ms`)
        last = size
      }
      const kinds = heapByKind(JSON.parse(readFileSync(join(tmp, file), 'utf8')))
      const total = [...kinds.values()].reduce((sum, each) => sum + each.bytes, 0)
      const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1)
      console.log(
        `# ${databaseName}: ${measured.requests} requests of scenario g in 10 s${measured.problems ? `, UNEXPECTED ${measured.problems}` : ''}`,
      )
      console.log(
        `peak RSS (VmHWM) ${((peak?.hwmKiB ?? Number.NaN) / 1024).toFixed(1)} MB; JavaScript heap in the snapshot ${mb(total)} MB`,
      )
      console.log('| kind | MB | objects |\n|---|---:|---:|')
      for (const [label, { bytes, count }] of [...kinds].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, TOP))
        console.log(`| ${label} | ${mb(bytes)} | ${count} |`)
    } finally {
      await server.stop()
    }
  } finally {
    killChildren()
    await database.destroy()
    rmSync(tmp, { recursive: true, force: true })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(
    () => process.exit(),
    (error: unknown) => {
      process.stderr.write(`heap: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exit(1)
    },
  )
}
