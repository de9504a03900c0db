// The soak's fixed constants and its settings from the environment (SOAK_*; listed in bench/soak.ts).
import { integerSetting } from './report.js'

/** Passed in API_KEYS, so no key is created at start-up. */
export const API_KEY = 'soak-api-key-0123456789-abcdefghijklmnopqrstuvwxyz'
/** A well-formed key the service does not accept. */
export const WRONG_KEY = 'soak-wrong-key-0123456789-abcdefghijklmnopqrstuvw'
/** Pets created before the load. */
export const SEED_PETS = 500
/** How many seeding requests are in flight at once. */
export const SEED_CONCURRENCY = 8
/** Per-request timeout of the load generator, in seconds (the service's requestTimeout is 10 s too). */
export const REQUEST_TIMEOUT_S = 10
/** The most RSS may grow from after the warm-up to the end, in percent (the soak's memory target). */
export const RSS_GROWTH_TARGET_PCT = 10
/** Seconds of samples whose median gives the smoothed RSS at a point (GC makes single samples noisy). */
export const SMOOTHING_WINDOW_S = 10
/** The pet statuses, for seeding and the traffic mix. */
export const STATUSES = ['available', 'pending', 'sold'] as const

/** Soak settings; see the header of bench/soak.ts. */
export interface Settings {
  durationS: number
  connections: number
  warmupS: number
  /** SOAK_DATABASE_URL, or undefined for a temporary SQLite file. */
  databaseUrl: string | undefined
}

/** Reads the SOAK_* settings; throws naming the variable when one is out of range. */
export function readSettings(env: NodeJS.ProcessEnv): Settings {
  const int = (name: string, fallback: number, min: number, max: number) => integerSetting(env, name, fallback, min, max)
  return {
    durationS: int('SOAK_DURATION_S', 300, 1, 86_400),
    connections: int('SOAK_CONNECTIONS', 128, 1, 1024),
    warmupS: int('SOAK_WARMUP_S', 30, 0, 3600),
    databaseUrl: env.SOAK_DATABASE_URL || undefined,
  }
}
