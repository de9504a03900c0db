// Where the soak's service holds its memory: /metrics and /proc readings, database file sizes, smoothed RSS.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { SMOOTHING_WINDOW_S } from './soak-settings.js'
import { percentile } from './stats.js'

/** Where the service's memory is (bytes, from GET /metrics and /proc/PID/status), and its event-loop delay. */
export interface Inside {
  heapUsed: number
  heapTotal: number
  external: number
  /** The longest event-loop delay since the previous scrape (prom-client resets it on every scrape), seconds. */
  loopDelayMax: number
  rssAnon: number
  rssFile: number
  rssShmem: number
}

/** Reads Inside; NaN for what cannot be read (metrics off, process gone). */
export async function inside(origin: string, pid: number): Promise<Inside> {
  let text = ''
  try {
    const response = await fetch(`${origin}/metrics`, { signal: AbortSignal.timeout(5000) })
    text = await response.text()
  } catch {}
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  let status = ''
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {}
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
  return {
    heapUsed: metric('nodejs_heap_size_used_bytes'),
    heapTotal: metric('nodejs_heap_size_total_bytes'),
    external: metric('nodejs_external_memory_bytes'),
    loopDelayMax: metric('nodejs_eventloop_lag_max_seconds'),
    rssAnon: kib('RssAnon'),
    rssFile: kib('RssFile'),
    rssShmem: kib('RssShmem'),
  }
}

/** Sizes (bytes) of the SQLite database file and its WAL, or undefined. */
export function databaseFiles(path: string): { database: number; wal: number } | undefined {
  try {
    const size = (file: string) => (existsSync(file) ? statSync(file).size : 0)
    return { database: size(path), wal: size(`${path}-wal`) }
  } catch {
    return undefined
  }
}

/** The median RSS (KiB) of the samples in [from, from + SMOOTHING_WINDOW_S) seconds. */
export function windowMedian(samples: ReadonlyArray<{ t: number; rssKiB: number }>, from: number): number {
  const values = samples
    .filter((each) => each.t >= from && each.t < from + SMOOTHING_WINDOW_S)
    .map((each) => each.rssKiB)
    .sort((a, b) => a - b)
  return percentile(values, 50)
}
