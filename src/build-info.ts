// What build is running: the service's version (package.json), the git commit it was built from
// and Node.js's version, for the build-info metric and the `service.version` of traces.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

/** The service's version, as package.json gives it (`1.0.0`). */
export const SERVICE_VERSION: string = (createRequire(import.meta.url)('../package.json') as { version: string }).version

/** The Node.js version running the service, without its `v` (`24.21.0`). */
export const NODE_VERSION: string = process.versions.node

/**
 * The git commit this build was made from (`npm run build` writes dist/build-commit.txt:
 * scripts/build-commit.mjs), `…-dirty` when built from changed files, or `unknown` (run from the
 * sources, or built where no commit could be told). Instances of different builds show apart on
 * /metrics during a rolling deploy even when they share a version.
 */
export const SERVICE_COMMIT: string = readCommit()

function readCommit(): string {
  try {
    return readFileSync(new URL('./build-commit.txt', import.meta.url), 'utf8').trim() || 'unknown'
  } catch {
    return 'unknown'
  }
}
