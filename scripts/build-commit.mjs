// Part of `npm run build`: writes the git commit being built to dist/build-commit.txt, which
// src/build-info.ts reads for the `commit` label of animal_store_build_info. SOURCE_COMMIT (the
// Dockerfile's build argument, or a CI's variable) names it where there is no .git; else
// `git rev-parse HEAD`, with `-dirty` when tracked files differ from it; else `unknown`.
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()

function commit() {
  if (process.env.SOURCE_COMMIT) return process.env.SOURCE_COMMIT
  try {
    const head = git('rev-parse', 'HEAD')
    return git('status', '--porcelain', '--untracked-files=no') === '' ? head : `${head}-dirty`
  } catch {
    return 'unknown'
  }
}

writeFileSync(new URL('../dist/build-commit.txt', import.meta.url), `${commit()}\n`)
