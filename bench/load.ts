// Load generation for the bench: which generator runs (wrk when installed, else autocannon), on which core, and
// one bounded run of a workload against one target.
import { spawnSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { runBounded } from './processes.js'
import type { LoadOptions, Measurement, Workload } from './workload.js'
import { runWrk } from './wrk.js'

/** Seconds a generator may run past its duration before it is killed. */
const GRACE_S = 20

/** How load is generated in this run. */
export interface Generators {
  /** `wrk` when it is on PATH, else `autocannon` (always used for fixed-rate runs). */
  saturating: 'wrk' | 'autocannon'
  /** Whether servers run on CPU 0 and generators on CPU 1 (`taskset` on PATH and at least 2 CPUs). */
  pinned: boolean
  /** The folder for scripts and option files (the run's temp dir). */
  dir: string
  /** The transpiled autocannon-run.js, run with this process's node. */
  autocannonScript: string
}

/** Whether `command --version` runs. */
function installed(command: string): boolean {
  return spawnSync(command, ['--version'], { stdio: 'ignore', timeout: 5000 }).error === undefined
}

/** Detects wrk and taskset (installs nothing); `forceAutocannon` uses autocannon even when wrk is there. */
export function detectGenerators(dir: string, autocannonScript: string, forceAutocannon: boolean): Generators {
  return {
    saturating: !forceAutocannon && installed('wrk') ? 'wrk' : 'autocannon',
    pinned: installed('taskset') && availableParallelism() >= 2,
    dir,
    autocannonScript,
  }
}

/** The CPU the servers under test run on, when pinned. */
export const SERVER_CPU = 0
/** The CPU the load generator runs on, when pinned. */
export const GENERATOR_CPU = 1

/** `taskset -c CPU` when pinned, else nothing: the prefix that starts a process on `cpu`. */
export function pinTo(generators: Generators, cpu: number): string[] {
  return generators.pinned ? ['taskset', '-c', String(cpu)] : []
}

let runs = 0

/**
 * Sends `workload` to `options.origin` for `options.durationS` seconds from a separate process on the generator's
 * core: wrk when installed and no `overallRate` is asked for, else autocannon. Throws if the generator fails.
 */
export async function measure(generators: Generators, workload: Workload, options: LoadOptions): Promise<Measurement> {
  if (!options.origin.startsWith('http://127.0.0.1:')) throw new Error(`refusing to load ${options.origin}: 127.0.0.1 only`)
  const seed = ++runs
  const prefix = pinTo(generators, GENERATOR_CPU)
  if (generators.saturating === 'wrk' && options.overallRate === undefined) {
    return runWrk(workload, options, { dir: generators.dir, prefix, seed })
  }
  const file = join(generators.dir, `autocannon-${seed}.json`)
  writeFileSync(file, JSON.stringify({ workload, options, seed }))
  const result = await runBounded(
    [...prefix, process.execPath, generators.autocannonScript, file],
    (options.durationS + GRACE_S) * 1000,
  )
  if (result.code !== 0) {
    throw new Error(`autocannon exited (code ${result.code}, signal ${result.signal}):\n${result.stderr.slice(-2000)}`)
  }
  return JSON.parse(result.stdout.trim().split('\n').pop() ?? '') as Measurement
}
