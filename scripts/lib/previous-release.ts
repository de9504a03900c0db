// The previous release, built as its users built it, for the upgrade and rollback test and the bench: its
// sources at a pinned git revision (git archive, so this checkout is untouched), its own `npm ci` from its
// own lockfile, its own `tsc` build. Kept in the system's temporary folder by revision, so that a
// second run on the same machine reuses it.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** This checkout's root, whose git history holds the revisions. */
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The release before this one: the main that landed before this round's changes. Bump it to the
 * landed main each round, so that every release is tested against the one it replaces.
 */
export const PREVIOUS_RELEASE = '71b354ac9052b60485e7a7f6f82399f43faafd54'

/**
 * Builds (or reuses) `revision` and resolves to the path of its `dist/cli.js`. Throws with the
 * command's output when the revision is not in this clone or its install or build fails.
 */
export function buildRelease(revision: string): string {
  const dir = join(tmpdir(), `animal-store-release-${revision}`)
  const cli = join(dir, 'dist', 'cli.js')
  if (existsSync(cli)) return cli
  const building = `${dir}.building-${process.pid}`
  rmSync(building, { recursive: true, force: true })
  mkdirSync(building, { recursive: true })
  const run = (command: string, args: string[], cwd: string) =>
    execFileSync(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 })
  try {
    const archive = run('git', ['archive', '--format=tar', revision], REPO_ROOT)
    execFileSync('tar', ['-x', '-C', building], { input: archive })
    // No install scripts: better-sqlite3 ships its binaries, and the dev-only `node` package would
    // download another Node.js. The release's own TypeScript builds it.
    run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], building)
    run(process.execPath, [join(building, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], building)
    // Whole or not at all: a build cut short is never taken for a built release.
    renameSync(building, dir)
  } catch (error) {
    rmSync(building, { recursive: true, force: true })
    const output = error as { stdout?: Buffer; stderr?: Buffer }
    throw new Error(`building release ${revision} failed: ${output.stderr ?? ''}${output.stdout ?? ''}`, { cause: error })
  }
  return cli
}
