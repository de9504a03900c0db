// The bench's settings, read once from the environment and bounded.
import { integerSetting } from './report.js'

/** The scenario letters, (a) to (g). */
export const SCENARIO_IDS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'] as const
/** One scenario letter. */
export type ScenarioId = (typeof SCENARIO_IDS)[number]
/** The databases the bench runs on, in run order. */
export const DATABASES = ['sqlite', 'postgres'] as const
/** One database. */
export type Database = (typeof DATABASES)[number]

/** Bench settings; each names its variable. */
export interface Settings {
  /** BENCH_DURATION_S (default 5, quick 2; 1–60): seconds per measured run. */
  durationS: number
  /** BENCH_ROUNDS (default 3, quick 1; 1–9): measured runs per scenario and target; medians are over these. */
  rounds: number
  /** BENCH_WARMUP_S (default 2, quick 1; 0–30): one unrecorded run per scenario and target before round 1. */
  warmupS: number
  /** BENCH_CONNECTIONS (default 64, 1–256): concurrent keep-alive connections. */
  connections: number
  /** BENCH_SCENARIOS (default all): comma-separated letters, e.g. `a,d`. */
  scenarios: ScenarioId[]
  /** BENCH_DATABASES (default `sqlite,postgres`). */
  databases: Database[]
  /** BENCH_GENERATOR=autocannon forces the fallback generator even when wrk is installed (to check it). */
  forceAutocannon: boolean
  /** BENCH_QUICK=1: short runs to check the harness (the defaults above marked quick); its figures mean nothing. */
  quick: boolean
  /** BENCH_SKIP_BUILD=1: use dist/ as it is instead of running `tsc -p .` first. */
  skipBuild: boolean
}

/** A comma-separated subset of `allowed` from `env[name]`, in `allowed`'s order; all when unset. */
function listSetting<T extends string>(env: NodeJS.ProcessEnv, name: string, allowed: readonly T[]): T[] {
  const text = env[name]
  if (text === undefined || text.trim() === '') return [...allowed]
  const picked = text.split(',').map((each) => each.trim())
  const unknown = picked.filter((each) => !allowed.includes(each as T))
  if (unknown.length > 0 || picked.length === 0)
    throw new Error(`${name} must be a comma-separated list of ${allowed.join(', ')}.`)
  return allowed.filter((each) => picked.includes(each))
}

/** Reads the settings; throws naming the variable when one is out of range. */
export function readSettings(env: NodeJS.ProcessEnv): Settings {
  const quick = env.BENCH_QUICK === '1'
  const int = (name: string, fallback: number, quickFallback: number, min: number, max: number) =>
    integerSetting(env, name, quick ? quickFallback : fallback, min, max)
  return {
    durationS: int('BENCH_DURATION_S', 5, 2, 1, 60),
    rounds: int('BENCH_ROUNDS', 3, 1, 1, 9),
    warmupS: int('BENCH_WARMUP_S', 2, 1, 0, 30),
    connections: int('BENCH_CONNECTIONS', 64, 64, 1, 256),
    scenarios: listSetting(env, 'BENCH_SCENARIOS', SCENARIO_IDS),
    databases: listSetting(env, 'BENCH_DATABASES', DATABASES),
    forceAutocannon: env.BENCH_GENERATOR === 'autocannon',
    quick,
    skipBuild: env.BENCH_SKIP_BUILD === '1',
  }
}

/** The `BENCH_…=value` variables set in `env`, for printing the exact command. */
export function benchVariables(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => name.startsWith('BENCH_'))
    .sort()
    .map((name) => `${name}=${env[name]}`)
}
