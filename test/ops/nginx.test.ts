// The bundled deploy/nginx.conf, checked against the service (the body limit, the JSON bodies it
// answers with) and run by Debian's nginx in front of two `serve` instances: oversized bodies get the
// JSON 413, early answers never make nginx eject an instance, and clients never see an HTML page.
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { describeEachDatabase, freshDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { CLOSE_LINGER_MS } from '../../src/http/connection/shutdown.js'
import { ApiError } from '../../src/http/errors.js'
import { BODY_LIMIT_BYTES } from '../../src/schemas.js'
import { cliEnv, killLeftovers, type ServeProcess, startServe } from '../support/cli-process.js'
import { CONF, type Nginx, startShippedNginx } from '../support/nginx.js'

const API_KEY = 'nginx-test-key-0123456789abcdef'
const MIB = 1024 * 1024

/** The service's own Error body for `code`, as the bytes it sends. */
const errorBody = (code: 'body_too_large' | 'service_unavailable' | 'not_found') => JSON.stringify(new ApiError(code).toBody())

/** The text of `return STATUS '…';` in the conf's location named `name`. */
function returnedBody(name: string, status: number): string {
  const block = new RegExp(`location ${name} \\{[^}]*?return ${status} '([^']*)';`).exec(CONF)
  assert.ok(block, `deploy/nginx.conf has a location ${name} returning ${status}`)
  return block[1] as string
}

/** nginx's size syntax (`16k`, `1m`, `100`) in bytes. */
function nginxSize(text: string): number {
  const [, digits, unit = ''] = /^(\d+)([kKmM]?)$/.exec(text) ?? []
  assert.ok(digits, `${text} is an nginx size`)
  const factor = unit === '' ? 1 : /k/i.test(unit) ? 1024 : 1024 * 1024
  return Number(digits) * factor
}

/** Status, Content-Type and text of one request through the balancer. */
async function send(origin: string, method: string, path: string, { key = true, body }: { key?: boolean; body?: Buffer } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (key) headers.authorization = `Bearer ${API_KEY}`
  const response = await fetch(origin + path, { method, headers, body })
  return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() }
}

/** Counts of each value, e.g. `{ '200': 20 }`. */
function tally(values: Array<string | number>): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1
  return counts
}

describe('deploy/nginx.conf agrees with the service', () => {
  it('refuses bodies over the service limit itself: client_max_body_size is BODY_LIMIT_BYTES', () => {
    const sizes = [...CONF.matchAll(/client_max_body_size\s+(\S+);/g)].map((match) => nginxSize(match[1] as string))
    assert.deepEqual(sizes, [BODY_LIMIT_BYTES])
  })

  it("answers 413 with the service's body_too_large Error body, 502/504 with its service_unavailable 503, /metrics with its 404", () => {
    assert.match(CONF, /error_page 413 @body_too_large;/)
    assert.match(CONF, /error_page 502 504 =503 @unavailable;/)
    assert.equal(returnedBody('@body_too_large', 413), errorBody('body_too_large'))
    assert.equal(returnedBody('@unavailable', 503), errorBody('service_unavailable'))
    assert.equal(returnedBody('= /metrics', 404), errorBody('not_found'))
  })

  it('forwards the client address, and takes an instance out only after several failures', () => {
    assert.match(CONF, /proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;/)
    assert.match(CONF, /proxy_set_header X-Real-IP \$remote_addr;/)
    const servers = [...CONF.matchAll(/^\s*server (api-\d:8080)([^;]*);/gm)]
    assert.equal(servers.length, 2)
    for (const [, name, options] of servers) {
      const maxFails = Number(/max_fails=(\d+)/.exec(options ?? '')?.[1] ?? 1)
      assert.ok(maxFails === 0 || maxFails >= 3, `${name}: max_fails=${maxFails} ejects it on a single error`)
    }
  })

  it('closes an idle connection to an instance before a stopping instance closes it: keepalive_timeout is below CLOSE_LINGER_MS', () => {
    const timeouts = [...CONF.matchAll(/^\s*keepalive_timeout\s+(\d+)ms;/gm)].map((match) => Number(match[1]))
    assert.equal(timeouts.length, 1, 'one keepalive_timeout, in ms, in the upstream block')
    assert.ok((timeouts[0] as number) <= CLOSE_LINGER_MS / 2, `keepalive_timeout ${timeouts[0]} ms, linger ${CLOSE_LINGER_MS} ms`)
    assert.ok(CONF.indexOf('keepalive_timeout') < CONF.indexOf('server {'), 'in the upstream block, not the server block')
  })
})

describeEachDatabase('deploy/nginx.conf run by nginx in front of two instances', (database) => {
  const dir = tempDir()
  let instances: ServeProcess[] = []
  let nginx: Nginx
  let dropDatabases: Array<() => Promise<void>> = []

  before(async () => {
    // Two instances on one PostgreSQL database, or on an SQLite file each (the same API_KEYS).
    const urls: string[] = []
    if (database === 'postgres') {
      const shared = await freshDatabase('postgres', dir.path)
      urls.push(shared.url, shared.url)
      dropDatabases = [shared.drop]
    } else {
      urls.push(`sqlite:${join(dir.path, 'a.db')}`, `sqlite:${join(dir.path, 'b.db')}`)
    }
    // One after the other: two instances that race to migrate one database are scale-out.test.ts's subject.
    for (const url of urls) instances.push(await startServe(cliEnv({ DATABASE_URL: url, API_KEYS: API_KEY, LOG_LEVEL: 'warn' })))
    const [a, b] = instances.map((instance) => instance.port) as [number, number]
    nginx = await startShippedNginx([a, b])
  })

  after(async () => {
    await nginx?.stop()
    await Promise.all(instances.map((instance) => instance.stop()))
    killLeftovers()
    for (const drop of dropDatabases) await drop()
    dir.remove()
  })

  it("answers oversized POSTs (1 MiB, 10 MiB) with or without a key with the service's JSON 413; GETs right after all get 200, never 502", async (t) => {
    const answers: string[] = []
    for (const size of [MIB, 10 * MIB]) {
      // Without a key first: on an instance, these are the early answers that once ended in resets.
      for (const key of [false, true]) {
        for (let i = 0; i < 5; i++) {
          const { status, type, text } = await send(nginx.origin, 'POST', '/v1/pets', { key, body: Buffer.alloc(size, 0x61) })
          answers.push(
            status === 413 && type === 'application/json' && text === errorBody('body_too_large')
              ? '413 JSON'
              : `${status} ${type}`,
          )
        }
      }
    }
    const gets: number[] = []
    for (let i = 0; i < 20; i++) gets.push((await send(nginx.origin, 'GET', '/v1/pets?limit=1')).status)
    t.diagnostic(`POSTs: ${JSON.stringify(tally(answers))}; GETs after: ${JSON.stringify(tally(gets))}`)
    assert.deepEqual(tally(answers), { '413 JSON': 20 })
    assert.deepEqual(tally(gets), { 200: 20 })
  })

  it('passes bodies within the limit to the instances: each gets its JSON 401 without a key, 201 with one; GETs right after all get 200', async (t) => {
    // Exactly BODY_LIMIT_BYTES: a pet padded with spaces, so that nginx lets it through.
    const pet = '{"name":"padded","categoryId":1}'
    const body = Buffer.from(pet + ' '.repeat(BODY_LIMIT_BYTES - pet.length))
    const answers: string[] = []
    for (let i = 0; i < 20; i++) {
      const { status, text } = await send(nginx.origin, 'POST', '/v1/pets', { key: false, body })
      answers.push(`${status} ${/"code":"(\w+)"/.exec(text)?.[1] ?? text.slice(0, 40)}`)
    }
    const created = await send(nginx.origin, 'POST', '/v1/pets', { body })
    const gets: number[] = []
    for (let i = 0; i < 20; i++) gets.push((await send(nginx.origin, 'GET', '/v1/pets?limit=1')).status)
    t.diagnostic(`POSTs without a key: ${JSON.stringify(tally(answers))}; GETs after: ${JSON.stringify(tally(gets))}`)
    assert.deepEqual(tally(answers), { '401 missing_api_key': 20 })
    assert.equal(created.status, 201)
    assert.deepEqual(tally(gets), { 200: 20 })
    assert.doesNotMatch(nginx.errorLog(), /no live upstreams|upstream prematurely closed|Broken pipe|reset by peer/)
  })

  it('answers JSON 503 service_unavailable, never an HTML page, once no instance answers', async () => {
    await Promise.all(instances.map((instance) => instance.stop()))
    instances = []
    const { status, type, text } = await send(nginx.origin, 'GET', '/v1/pets?limit=1')
    assert.equal(status, 503)
    assert.equal(type, 'application/json')
    assert.equal(text, errorBody('service_unavailable'))
  })
})
