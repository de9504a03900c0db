// The container files, read as text (no Docker engine runs the tests): the properties that keep the
// image and the compose deployment locked down, so that none of them can silently regress.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { parse } from 'yaml'
import { REPO_ROOT } from '../support/cli-process.js'

const dockerfile = readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')
/** Dockerfile instructions, continuation lines joined, comments dropped: [keyword, rest]. */
const instructions = dockerfile
  .replace(/\\\n/g, ' ')
  .split('\n')
  .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
  .map((line) => {
    const [keyword = '', ...rest] = line.trim().split(/\s+/)
    return [keyword.toUpperCase(), rest.join(' ')] as const
  })
const args = (keyword: string) => instructions.filter(([k]) => k === keyword).map(([, rest]) => rest)

describe('Dockerfile', () => {
  it('builds on node:24-slim pinned by an image digest, in every stage', () => {
    const [image] = args('ARG').filter((arg) => arg.startsWith('NODE_IMAGE='))
    assert.match(image ?? '', /^NODE_IMAGE=node:24-slim@sha256:[0-9a-f]{64}$/)
    const froms = args('FROM')
    assert.ok(froms.length >= 1)
    for (const from of froms) assert.match(from, /^\$\{NODE_IMAGE\}( AS \w+)?$/)
  })

  it('compiles nothing: no toolchain, no npm rebuild, installs without scripts', () => {
    for (const run of args('RUN')) {
      assert.doesNotMatch(run, /apt-get|g\+\+|python3|npm rebuild|node-gyp/, run)
      if (/\bnpm ci\b/.test(run)) assert.match(run, /--ignore-scripts/, run)
    }
  })

  it('builds with the commit given as SOURCE_COMMIT, for the build-info metric', () => {
    assert.ok(args('ARG').includes('SOURCE_COMMIT=unknown'), 'ARG SOURCE_COMMIT=unknown')
    assert.ok(args('RUN').includes(`SOURCE_COMMIT=\${SOURCE_COMMIT} npm run build`), 'the build reads it')
    assert.ok(args('COPY').includes('scripts/build-commit.mjs ./scripts/'), 'the script that writes it is copied')
  })

  it('runs as a non-root user given by number, ahead of the command', () => {
    const users = args('USER')
    assert.equal(users.length, 1)
    assert.match(users[0] ?? '', /^[1-9]\d*(:[1-9]\d*)?$/)
    const last = (keyword: string) => instructions.map(([k]) => k).lastIndexOf(keyword)
    assert.ok(last('USER') < last('CMD'))
    assert.ok(last('USER') > last('RUN'), 'nothing runs as root after USER is set')
  })

  it('starts the service exactly as `npm start` does (same node options), with node as PID 1', () => {
    const command = JSON.parse(args('CMD').at(-1) ?? '[]') as string[]
    const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }
    assert.deepEqual(command, pkg.scripts.start.split(/\s+/))
  })

  it('has a HEALTHCHECK on the liveness probe', () => {
    const [check] = args('HEALTHCHECK')
    assert.match(check ?? '', /CMD .*\/healthz/)
  })
})

describe('compose.yaml', () => {
  const compose = parse(readFileSync(join(REPO_ROOT, 'compose.yaml'), 'utf8')) as {
    services: Record<string, Record<string, unknown>>
  }
  const instances = Object.entries(compose.services).filter(([, service]) => service.build !== undefined)

  it('has the Animal Store instances built from the Dockerfile', () => assert.ok(instances.length >= 1))

  it('gives every instance the one rate-limit store, a Redis-protocol service of the file, without persistence', () => {
    const urls = instances.map(([, service]) => (service.environment as Record<string, string>).RATE_LIMIT_STORE_URL)
    assert.equal(new Set(urls).size, 1, 'one store for every instance')
    const host = new URL(urls[0] ?? '').hostname
    const store = compose.services[host]
    assert.ok(store, `no service ${host}`)
    assert.match(String(store.image), /^(valkey\/valkey|redis):/)
    assert.ok((store.command as string[]).join(' ').includes('--save  --appendonly no'), 'counters only, nothing persisted')
    assert.equal(store.ports, undefined, 'reachable on the compose network only')
  })

  for (const [name, service] of instances) {
    it(`${name}: read-only root file system, every capability dropped, no new privileges, tmpfs /tmp`, () => {
      assert.equal(service.read_only, true)
      assert.deepEqual(service.cap_drop, ['ALL'])
      assert.equal(service.cap_add, undefined)
      assert.deepEqual(service.security_opt, ['no-new-privileges:true'])
      assert.ok(
        (service.tmpfs as string[] | undefined)?.some((mount) => mount.split(':')[0] === '/tmp'),
        'a tmpfs on /tmp',
      )
      assert.equal(service.privileged, undefined)
      assert.equal(service.user, undefined, 'the image sets its non-root user')
      assert.equal(service.ports, undefined, 'only the balancer publishes a port (never the metrics port)')
    })
  }
})
