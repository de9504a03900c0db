// The SQLite data folder and files are private to the service's user (0700 folder; 0600 database,
// -wal and -shm), even under umask 000, while existing files keep the modes an operator gave them;
// a symbolic link at the database's path (or its -wal's) is refused, never followed.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, REPO_ROOT, runCli } from '../support/cli-process.js'

const run = promisify(execFile)

/**
 * In a child process with umask 000 (so nothing masks a careless mode): opens the store at `path`
 * from the build, migrates, inserts a pet and, while the database is still open (the -wal and -shm
 * files exist only then), prints the mode of each of `files` as octal, one JSON object.
 */
async function modesWhileOpen(path: string, files: string[]): Promise<Record<string, string>> {
  const script = `
    process.umask(0)
    const { openStore } = await import(${JSON.stringify(join(REPO_ROOT, 'dist/store/index.js'))})
    const { statSync } = await import('node:fs')
    const store = await openStore({ dialect: 'sqlite', path: ${JSON.stringify(path)} })
    await store.migrate()
    await store.pets.insertPet({ name: 'p', categoryId: 1n, status: 'available' })
    const modes = Object.fromEntries(${JSON.stringify(files)}.map((f) => [f, (statSync(f).mode & 0o777).toString(8)]))
    await store.close()
    process.stdout.write(JSON.stringify(modes))
  `
  // A script file, not `--input-type=module -e`: threads the store starts inherit node's options,
  // and that one applies only to a main script given as a string.
  const scriptFile = join(tmpdir(), `animal-store-modes-${process.pid}-${Date.now()}.mjs`)
  writeFileSync(scriptFile, script)
  const { stdout } = await run(process.execPath, [scriptFile], { cwd: REPO_ROOT, timeout: 15_000 }).finally(() =>
    rmSync(scriptFile, { force: true }),
  )
  return JSON.parse(stdout) as Record<string, string>
}

describe('SQLite file permissions', () => {
  const dir = tempDir()
  before(assertBuilt)
  after(() => dir.remove())

  it('creates the data folders 0700 and the database, -wal and -shm files 0600 under umask 000', async () => {
    const folder = join(dir.path, 'data', 'nested')
    const path = join(folder, 'animal-store.db')
    const modes = await modesWhileOpen(path, [join(dir.path, 'data'), folder, path, `${path}-wal`, `${path}-shm`])
    assert.deepEqual(Object.values(modes), ['700', '700', '600', '600', '600'], JSON.stringify(modes))
  })

  it('refuses a symbolic link at the database path, dangling or not, in serve, migrate and restore: nothing is created or written at its target', async () => {
    const elsewhere = join(dir.path, 'elsewhere')
    mkdirSync(elsewhere)
    const link = join(dir.path, 'linked', 'animal-store.db')
    mkdirSync(join(dir.path, 'linked'))
    const env = cliEnv({
      DATABASE_URL: `sqlite:${link}`,
      API_KEYS: 'symlink-key_0123456789abcdefXYZ',
      PORT: '0',
      HOST: '127.0.0.1',
    })
    const backup = join(dir.path, 'genuine.db')
    const source = cliEnv({ DATABASE_URL: `sqlite:${join(dir.path, 'source.db')}` })
    assert.equal((await runCli(['migrate'], source)).code, 0)
    assert.equal((await runCli(['backup', '--to', backup], source)).code, 0)

    const dangling = join(elsewhere, 'stolen.db')
    symlinkSync(dangling, link)
    for (const args of [['migrate'], ['serve'], ['restore', '--from', backup]]) {
      const result = await runCli(args, env)
      assert.equal(result.code, 1, `${args[0]}: ${result.stdout}`)
      assert.match(result.stderr, /^animal-store: .*linked\/animal-store\.db is a symbolic link; /, args[0])
    }
    assert.deepEqual(readdirSync(elsewhere), [], 'nothing created at the dangling target')

    rmSync(link)
    const target = join(elsewhere, 'target.db')
    writeFileSync(target, '')
    symlinkSync(target, link)
    const result = await runCli(['migrate'], env)
    assert.equal(result.code, 1)
    assert.match(result.stderr, /is a symbolic link/)
    assert.deepEqual(readdirSync(elsewhere), ['target.db'])
    assert.equal(readFileSync(target).length, 0, 'the target is not written')
  })

  it('refuses a symbolic link at the -wal of an existing database', async () => {
    const path = join(dir.path, 'wal-linked.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}` })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const target = join(dir.path, 'wal-target')
    symlinkSync(target, `${path}-wal`)
    const result = await runCli(['migrate'], env)
    assert.equal(result.code, 1)
    assert.match(result.stderr, /wal-linked\.db-wal is a symbolic link; /)
    assert.equal(existsSync(target), false, 'the -wal is not created at the link target')
  })

  it('leaves an existing database file with the mode it has', async () => {
    const path = join(dir.path, 'existing.db')
    writeFileSync(path, '', { mode: 0o640 })
    const modes = await modesWhileOpen(path, [path])
    assert.equal(modes[path], '640')
    assert.equal(statSync(dir.path).isDirectory(), true)
  })
})
