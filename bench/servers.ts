// How the bench starts each of its processes (docs/benchmarks.md, Method): the service exactly as `npm start` runs it,
// the previous release as its own `npm start` ran it, both with the same settings, and the reference apps of
// bench/references/ from a plain JavaScript copy (no TypeScript loader in their memory), each with what it reads.
import { mkdirSync, readdirSync, readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import type { BenchDatabase } from './databases.js'
import { AUTHORIZATION, type Process } from './scenarios.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/** Where each process's program is: this checkout, the previous release's build, the references' copy. */
export interface ProgramPlaces {
  /** The node that runs every server (the project's Node 24). */
  node: string
  /** The folder transpileReferences wrote to. */
  references: string
  /** The previous release's checkout (with its dist/), when it is built. */
  previous?: string
}

/**
 * Writes each bench/references/*.ts as plain JavaScript to `dir`/references/*.js, with a package.json making them ES
 * modules and a link to the project's node_modules for their imports. Returns the undo: removes the link (before the
 * folder is deleted, so nothing ever follows it out).
 */
export function transpileReferences(dir: string): () => void {
  const source = join(ROOT, 'bench/references')
  const target = join(dir, 'references')
  mkdirSync(target, { recursive: true })
  const options = { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }
  for (const file of readdirSync(source).filter((name) => name.endsWith('.ts'))) {
    const { outputText } = ts.transpileModule(readFileSync(join(source, file), 'utf8'), { compilerOptions: options })
    writeFileSync(join(target, file.replace(/\.ts$/, '.js')), outputText)
  }
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
  return () => unlinkSync(join(dir, 'node_modules'))
}

/** `node ARGS…` of the `start` script in `root`/package.json, its `.js` arguments made absolute. */
function npmStart(node: string, root: string): string[] {
  const start = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts.start as string
  const [command, ...args] = start.split(/\s+/)
  if (command !== 'node') throw new Error(`npm start in ${root} is not \`node …\`: ${start}`)
  return [node, ...args.map((arg) => (arg.endsWith('.js') ? join(root, arg) : arg))]
}

/** The command line and environment that start `process` on `database` (PORT 0: each prints the port it took). */
export function programOf(
  process: Process,
  database: BenchDatabase,
  places: ProgramPlaces,
): { argv: string[]; env: NodeJS.ProcessEnv } {
  const base = { PATH: globalThis.process.env.PATH, HOME: globalThis.process.env.HOME }
  if (process === 'service' || process === 'previous') {
    if (process === 'previous' && places.previous === undefined) throw new Error('the previous release is not built')
    const root = process === 'service' ? ROOT : (places.previous as string)
    const env = {
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: database.url,
      API_KEYS: AUTHORIZATION.slice('Bearer '.length),
      // The highest limits the service accepts: still counted on every request, never reached at bench rates.
      RATE_LIMIT_PER_MINUTE: '10000000',
      AUTH_FAILURES_PER_MINUTE: '10000000',
      METRICS_PORT: '0',
    }
    return { argv: npmStart(places.node, root), env: { ...base, ...env } }
  }
  const script = join(places.references, 'references', `${process}.js`)
  const env = { BENCH_AUTHORIZATION: AUTHORIZATION, BENCH_DATABASE: database.location, BENCH_POOL_MAX: '5' }
  return { argv: [places.node, script, ...(process === 'bare' ? [] : [database.kind])], env: { ...base, ...env } }
}
