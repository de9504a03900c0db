// The previous release, built as its users built it, for the upgrade and rollback test and the bench: its
// sources at a pinned git revision (git archive, so this checkout is untouched), the install its own
// lockfile makes (this checkout's, hard-linked, when the two lockfiles are the same), its own `tsc`
// build. Kept in the system's temporary folder by revision, so that a second run on the same machine
// reuses it.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** This checkout's root, whose git history holds the revisions. */
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))

/**
 * The release before this one: the main that landed before this round's changes. Bump it to the
 * landed main each round, so that every release is tested against the one it replaces.
 */
export const PREVIOUS_RELEASE = '1ca8740dc2b9b06e4b22a0329beddf89e5fc5030'

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
    if (!linkedSameInstall(revision, building, run)) {
      // No install scripts: better-sqlite3 ships its binaries, and the dev-only `node` package would
      // download another Node.js.
      run('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], building)
    }
    // The release's own TypeScript builds it.
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

/**
 * When `revision`'s lockfile is this checkout's, its `npm ci` would install this checkout's tree: hard-link
 * that one into `building` instead (under a second, where `npm ci` took 33 s and 45 s of CPU on the 2-core
 * machine, most of a release build). False, and nothing linked, when the lockfiles differ or the
 * temporary folder is on another file system than this checkout.
 */
function linkedSameInstall(
  revision: string,
  building: string,
  run: (command: string, args: string[], cwd: string) => Buffer,
): boolean {
  const lockfile = readFileSync(join(REPO_ROOT, 'package-lock.json'))
  if (!run('git', ['show', `${revision}:package-lock.json`], REPO_ROOT).equals(lockfile)) return false
  try {
    run('cp', ['-al', join(REPO_ROOT, 'node_modules'), join(building, 'node_modules')], building)
    return true
  } catch {
    rmSync(join(building, 'node_modules'), { recursive: true, force: true })
    return false
  }
}
