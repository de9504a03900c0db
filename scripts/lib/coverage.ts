// src/'s line coverage over every covered test process of a suite run (scripts/test.ts): each of them
// writes V8's coverage to one folder (NODE_V8_COVERAGE), and c8 merges those files, maps them back to
// the TypeScript sources through tsx's source maps, and sums the lines of the src/ files they loaded.
// One folder for all runs is what lets the suite run some files in one shared process and the rest
// in their own, and still measure one figure.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Lines of src/ the tests ran, of those in the files they loaded. */
export interface LineCoverage {
  covered: number
  total: number
  /** covered ÷ total, in %; 0 when no line of src/ was loaded. */
  percent: number
}

/** c8's summary of one file or of the total, as its json-summary report writes it (`pct` is "Unknown" of no line). */
interface Summary {
  lines: { total: number; covered: number }
}

/**
 * The line coverage of src/ but the `exclude` globs (relative to the working directory) in the V8
 * coverage files in `coverageDir` (NODE_V8_COVERAGE of the test processes), from c8's json-summary
 * report. Throws if c8 fails.
 */
export function lineCoverage(coverageDir: string, exclude: string[]): LineCoverage {
  const reportDir = mkdtempSync(join(tmpdir(), 'animal-store-coverage-report-'))
  try {
    const c8 = createRequire(import.meta.url).resolve('c8/bin/c8.js')
    execFileSync(
      process.execPath,
      [
        c8,
        'report',
        '--temp-directory',
        coverageDir,
        '--include',
        'src/**',
        ...exclude.flatMap((glob) => ['--exclude', glob]),
        '--reporter',
        'json-summary',
        '--reports-dir',
        reportDir,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    )
    const { total } = JSON.parse(readFileSync(join(reportDir, 'coverage-summary.json'), 'utf8')) as { total: Summary }
    const { covered, total: lines } = total.lines
    return { covered, total: lines, percent: lines === 0 ? 0 : (100 * covered) / lines }
  } finally {
    rmSync(reportDir, { recursive: true, force: true })
  }
}
