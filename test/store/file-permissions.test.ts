// The SQLite data folder and files are private to the service's user (0700 folder; 0600 database,
// -wal and -shm), even under umask 000; an existing file is used only when it is the service's own
// (its user's, open to no one else: what it made in an earlier run), never another user's nor one
// in a folder every user may write; a symbolic link at the database's path (or its -wal's) is
// refused, never followed.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, REPO_ROOT, runCli, startServe } from '../support/cli-process.js'

const run = promisify(execFile)

/** The uid (and gid) of `nobody`, another user than the tests' (they run as root, as sqlite-faults.test.ts needs). */
const NOBODY = 65534

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

  it('refuses an existing database, -wal or -shm open to other users, in migrate, serve and restore, naming it and the fix', async () => {
    const path = join(dir.path, 'open', 'animal-store.db')
    const env = cliEnv({
      DATABASE_URL: `sqlite:${path}`,
      API_KEYS: 'open-file-key_0123456789abcdefXYZ',
      PORT: '0',
      HOST: '127.0.0.1',
    })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const backup = join(dir.path, 'open-backup.db')
    assert.equal((await runCli(['backup', '--to', backup], env)).code, 0)
    const everyCommand = [['migrate'], ['serve'], ['restore', '--from', backup]]
    const cases: Array<[file: string, mode: number, commands: string[][]]> = [
      [path, 0o644, everyCommand], // what a release before the database was made 0600 created under umask 022
      [path, 0o640, [['migrate']]],
      [path, 0o604, [['migrate']]],
      [`${path}-wal`, 0o660, everyCommand],
      [`${path}-shm`, 0o644, [['migrate']]],
    ]
    for (const [file, mode, commands] of cases) {
      if (file !== path) writeFileSync(file, '')
      chmodSync(file, mode)
      const before = readFileSync(path)
      for (const args of commands) {
        const result = await runCli(args, env)
        assert.equal(result.code, 1, `${args[0]}: ${result.stdout}`)
        assert.equal(
          result.stderr,
          `animal-store: ${file} is open to other users (mode 0${mode.toString(8)}): the database holds the API keys' hashes; make it and its -wal and -shm readable by the service's user alone (chmod 600), as the service creates them\n`,
          args[0],
        )
      }
      assert.deepEqual(readFileSync(path), before, 'the database is untouched')
      assert.equal(statSync(file).mode & 0o777, mode, 'its mode is left for the operator to decide')
      if (file === path) chmodSync(path, 0o600)
      else rmSync(file)
    }
    assert.equal((await runCli(['migrate'], env)).code, 0, 'chmod 600 is the fix')
  })

  it('refuses a database file another user made beforehand, and a folder every user may write, changing neither', async () => {
    // The review's reproduction: a folder every user may write, where another user made the file first.
    const shared = join(dir.path, 'shared')
    mkdirSync(shared)
    chmodSync(shared, 0o1777)
    const path = join(shared, 'db.sqlite')
    writeFileSync(path, '', { mode: 0o600 })
    chownSync(path, NOBODY, NOBODY)
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}` })
    const inShared = await runCli(['keys', 'create', '--name', 'victim'], env)
    assert.equal(inShared.code, 1)
    assert.equal(
      inShared.stderr,
      `animal-store: the folder of ${path} may be written by every user (mode 1777): another user could put files of their own in place of the database's; keep it in a folder of the service's user (a new one is created 0700)\n`,
    )

    chmodSync(shared, 0o700)
    for (const args of [['keys', 'create', '--name', 'victim'], ['serve']]) {
      const result = await runCli(args, { ...env, PORT: '0', HOST: '127.0.0.1' })
      assert.equal(result.code, 1, `${args[0]}: ${result.stdout}`)
      assert.equal(
        result.stderr,
        `animal-store: ${path} belongs to another user (uid ${NOBODY}), not to the service's (uid ${process.geteuid?.()}): they could read and change the data; move it away, or give it to the service's user (chown), and start again\n`,
      )
    }
    assert.equal(statSync(path).size, 0, 'nothing was written into it')
    assert.equal(statSync(path).uid, NOBODY, 'it is still theirs')
    assert.deepEqual(readdirSync(shared), ['db.sqlite'], 'no -wal or -shm was made beside it')
  })

  it('starts on the files it made itself in an earlier run, -wal and -shm included', async () => {
    const path = join(dir.path, 'own', 'animal-store.db')
    const env = cliEnv({ DATABASE_URL: `sqlite:${path}`, API_KEYS: 'own-files-key_0123456789abcdefXYZ', LOG_LEVEL: 'warn' })
    assert.equal((await runCli(['migrate'], env)).code, 0)
    const server = await startServe(env)
    try {
      // While it runs, its -wal and -shm exist: another command on the same files starts too.
      assert.ok(existsSync(`${path}-wal`) && existsSync(`${path}-shm`))
      const listed = await runCli(['keys', 'list'], env)
      assert.equal(listed.code, 0, listed.stderr)
    } finally {
      await server.stop()
    }
    const again = await startServe(env)
    await again.stop()
  })
})
