// The operator's docs (docs/deploying.md, docs/operating.md, docs/security.md, the README's
// "Operating it") state what the service does: the fields of a real log line, the metrics a real
// /metrics exposes, the timeouts and batching in the code, the Idempotency-Key a client can retry
// with, and a runbook entry for each alert of deploy/prometheus-rules.yml. Each fact is read from
// the code, the rules or a running server, so a change to either side fails here until the docs follow.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import { parse } from 'yaml'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { MAX_REPLICAS, VARIABLES } from '../../src/config.js'
import { SERVER_TIMEOUTS } from '../../src/http/connection/timeouts.js'
import { REQUEST_DURATION_BUCKETS } from '../../src/http/observability/metrics.js'
import { METRICS_MAX_CONNECTIONS } from '../../src/http/observability/metrics-server.js'
import { LEASE_DIVISOR, MAX_BATCH, STORE_RETRY_MS } from '../../src/http/pipeline/fleet-budget.js'
import { LOG_BATCH_BYTES, LOG_FLUSH_MS, STDOUT_FAILED_MESSAGE } from '../../src/logger.js'
import { WORKER_RESTARTS_METRIC } from '../../src/server/cluster-metrics.js'
import { REPLICA_CHECK_INTERVAL_MS, REPLICA_CHECK_TIMEOUT_MS, WAIT_POLL_MS } from '../../src/store/postgres/read-routing.js'
import { STORE_TIMEOUT_MS } from '../../src/store/rate-limit-store.js'

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8')
const deploying = read('docs/deploying.md')
const operating = read('docs/operating.md')
const readme = read('README.md')
const security = read('docs/security.md')

/** The text of a `## heading` section (up to the next `## `). */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`)
  assert.ok(start >= 0, `no "## ${heading}" section`)
  const end = text.indexOf('\n## ', start + 1)
  return text.slice(start, end < 0 ? undefined : end)
}

/** The README's bullet that starts with `**title**`. */
function readmeBullet(title: string): string {
  const start = readme.indexOf(`- **${title}**`)
  assert.ok(start >= 0, `no README bullet "${title}"`)
  const end = readme.indexOf('\n- **', start + 1)
  return readme.slice(start, end)
}

const codeSpans = (text: string) => new Set([...text.matchAll(/`([^`]+)`/g)].map((match) => match[1] as string))

describe('what the operator docs say about a running server', () => {
  let server: TestServer
  before(async () => {
    server = await startServer({ metrics: true })
  })
  after(() => server.close())

  it('names every field of a request log line (docs/deploying.md "Logs", README "Logs")', async () => {
    await call(server, 'GET', '/v1/pets', { headers: { 'x-request-id': 'docs-fields-1' } })
    const line = server.logs.find((each) => each.includes('"reqId":"docs-fields-1"'))
    assert.ok(line, 'the request was logged')
    const fields = Object.keys(JSON.parse(line) as object)
    assert.ok(fields.includes('client') && fields.includes('keyId'), fields.join(', '))
    const documented = codeSpans(section(deploying, 'Logs'))
    assert.deepEqual(
      fields.filter((field) => !documented.has(field)),
      [],
      'fields missing from docs/deploying.md "Logs"',
    )
    const operating = codeSpans(readmeBullet('Logs'))
    assert.deepEqual(
      ['method', 'route', 'status', 'durationMs', 'reqId', 'client', 'keyId'].filter((field) => !operating.has(field)),
      [],
      "fields missing from the README's Logs bullet",
    )
  })

  it('lists exactly the metrics /metrics exposes, besides prom-client defaults (docs/deploying.md "Metrics")', async () => {
    await call(server, 'GET', '/v1/pets')
    const text = await (await fetch(`${server.metricsOrigin}/metrics`)).text()
    const exposed = [...text.matchAll(/^# TYPE (\w+) /gm)]
      .map((match) => match[1] as string)
      .filter((name) => !/^(process|nodejs)_/.test(name))
    const documented = [...section(deploying, 'Metrics').matchAll(/\*\*`(\w+)`\*\*/g)].map((match) => match[1] as string)
    assert.deepEqual(
      exposed.filter((name) => !documented.includes(name)),
      [],
      'exposed but not documented',
    )
    assert.deepEqual(
      documented.filter((name) => !exposed.includes(name) && name !== WORKER_RESTARTS_METRIC),
      [],
      'documented but not exposed (the primary adds only the worker restarts)',
    )
    const first = (REQUEST_DURATION_BUCKETS[0] ?? 0) * 1000
    const last = REQUEST_DURATION_BUCKETS.at(-1) ?? 0
    assert.match(section(deploying, 'Metrics'), new RegExp(`buckets from ${first} ms to ${last} s`))
  })
})

describe('what the operator docs say about the code', () => {
  it('states the server timeouts of src/http/connection/timeouts.ts (docs/security.md API4, docs/deploying.md, README)', () => {
    const s = (ms: number) => `${ms / 1000} s`
    assert.ok(
      security.includes(
        `headers ${s(SERVER_TIMEOUTS.headersTimeout)}, request ${s(SERVER_TIMEOUTS.requestTimeout)}, a request or response stalled ${s(SERVER_TIMEOUTS.connectionTimeout)}, an idle keep-alive socket ${s(SERVER_TIMEOUTS.keepAliveTimeout)}`,
      ),
      'docs/security.md API4 timeouts',
    )
    assert.match(deploying, new RegExp(`\\*\\*below\\*\\* ${SERVER_TIMEOUTS.keepAliveTimeout / 1000} s`))
    assert.match(readme, new RegExp(`connection is kept ${SERVER_TIMEOUTS.keepAliveTimeout / 1000} s`))
  })

  it('states the bounds of the connection cap (timeouts.ts, metrics-server.ts) in docs/security.md and the README', () => {
    const s = (ms: number) => `${ms / 1000} s`
    const { evictableStall, evictableSilence, connectionsCheckingInterval, connectionTimeout } = SERVER_TIMEOUTS
    const cap = section(security, 'The connection cap').replaceAll(/\s+/g, ' ')
    for (const fact of [
      `at most ${METRICS_MAX_CONNECTIONS} (\`METRICS_MAX_CONNECTIONS\`)`,
      `no write progress for ${s(evictableStall)} (\`evictableStall\`)`,
      `silent for ${s(evictableSilence)} (\`evictableSilence\``,
      `checked every ${s(connectionsCheckingInterval)}`,
      `has not moved for ${s(connectionTimeout)} (\`connectionTimeout\``,
    ]) {
      assert.ok(cap.includes(fact), `docs/security.md "The connection cap": ${fact}`)
    }
    assert.ok(readme.replaceAll(/\s+/g, ' ').includes(`a response its client has not read for ${s(evictableStall)}`), 'README')
  })

  it('states how logs are batched and that error lines are not (src/logger.ts)', () => {
    const batching = `in batches (${LOG_BATCH_BYTES / 1024} KiB, or after at most ${LOG_FLUSH_MS / 1000} s)`
    assert.ok(section(deploying, 'Logs').includes(batching), 'docs/deploying.md "Logs"')
    assert.ok(readmeBullet('Logs').replaceAll(/\s+/g, ' ').includes(batching), 'README "Logs"')
    assert.match(section(deploying, 'Logs'), /level 50 \(`error`\) and\s+above are written at once/)
  })

  it('quotes the stderr line of a failed stdout as src/logger.ts writes it (docs/operating.md "AnimalStoreLogsStopped")', () => {
    const entry = operating.slice(operating.indexOf('\n### AnimalStoreLogsStopped\n'))
    const quoted = /one line `([^`]+)` with the error's\s+code/.exec(entry)?.[1]
    assert.ok(quoted && STDOUT_FAILED_MESSAGE.includes(quoted), `${quoted} is not part of: ${STDOUT_FAILED_MESSAGE}`)
  })

  it('states the timeout, lease size and retry of the rate-limit store (fleet-budget.ts, rate-limit-store.ts)', () => {
    const fleet = section(deploying, 'Rate limits on a fleet').replaceAll(/\s+/g, ' ')
    assert.ok(fleet.includes(`slower than ${STORE_TIMEOUT_MS} ms per lease`), 'docs/deploying.md: the timeout')
    assert.ok(fleet.includes(`(1/${LEASE_DIVISOR} of the limit, at most ${MAX_BATCH},`), 'docs/deploying.md: the lease')
    assert.ok(fleet.includes(`tries again every ${STORE_RETRY_MS / 1000} s`), 'docs/deploying.md: the retry')
    assert.ok(VARIABLES.RATE_LIMIT_STORE_URL.description?.includes(`slow (${STORE_TIMEOUT_MS} ms)`), 'RATE_LIMIT_STORE_URL')
    const rules = read('deploy/prometheus-rules.yml')
    assert.ok(rules.includes(`slower than ${STORE_TIMEOUT_MS} ms`), 'the description of the alert')
    assert.ok(section(operating, 'Runbook').includes(`slower than ${STORE_TIMEOUT_MS} ms`), 'the runbook')
  })

  it('states how replicas are checked and waited for (read-routing.ts, config.ts)', () => {
    const replicas = section(deploying, 'Read replicas').replaceAll(/\s+/g, ' ')
    const ms = (value: number) => (value >= 1000 ? `${value / 1000} s` : `${value} ms`)
    assert.ok(replicas.includes(`Every process checks, every ${ms(REPLICA_CHECK_INTERVAL_MS)},`), 'the interval')
    assert.ok(replicas.includes(`(each on its health connection, ${ms(REPLICA_CHECK_TIMEOUT_MS)} timeout)`), 'the timeout')
    assert.ok(replicas.includes(`up to ${REPLICA_CHECK_INTERVAL_MS / 1000} s when current`), 'the lag of a current replica')
    assert.ok(replicas.includes(`\`REPLICA_MAX_LAG_MS\` (${ms(VARIABLES.REPLICA_MAX_LAG_MS.default)})`), 'REPLICA_MAX_LAG_MS')
    assert.ok(replicas.includes(`\`REPLICA_WAIT_MS\` (${ms(VARIABLES.REPLICA_WAIT_MS.default)})`), 'REPLICA_WAIT_MS')
    assert.ok(replicas.includes(`asking the replicas every ${ms(WAIT_POLL_MS)} meanwhile`), 'the poll')
    assert.ok(replicas.includes(`At most ${MAX_REPLICAS}.`), 'the most replicas')
    assert.ok(security.includes(`once per ${ms(WAIT_POLL_MS)}, not once per read`), 'docs/security.md: the poll')
    const runbook = section(operating, 'Runbook').replaceAll(/\s+/g, ' ')
    assert.ok(runbook.includes(`within ${REPLICA_CHECK_INTERVAL_MS / 1000} s of being current`), 'the runbook')
  })

  it('tells clients retrying a create to send the Idempotency-Key the service honours', () => {
    const unavailable = section(deploying, '503 `service_unavailable`: what it means for clients')
    assert.match(unavailable, /`Idempotency-Key`/)
    assert.match(unavailable, /`idempotency_key_in_flight`/)
  })

  it('does not repeat statements the service has outgrown', () => {
    for (const [pattern, why] of [
      [/[Cc]lient addresses are not logged/, 'every request line has `client`'],
      [/does not record which key/, 'every request line has `keyId`'],
      [/has no idempotency key/, 'createPet honours Idempotency-Key'],
      [/idle socket 30 s/, 'an idle keep-alive socket is kept 72 s'],
    ] as const) {
      for (const [name, text] of [
        ['docs/deploying.md', deploying],
        ['docs/security.md', security],
        ['README.md', readme],
      ] as const) {
        assert.doesNotMatch(text, pattern, `${name}: ${why}`)
      }
    }
  })
})

describe('the runbook (docs/operating.md "Runbook")', () => {
  interface RuleFile {
    groups: Array<{ rules: Array<{ alert?: string }> }>
  }
  const alerts = (parse(read('deploy/prometheus-rules.yml')) as RuleFile).groups
    .flatMap((group) => group.rules)
    .flatMap((rule) => (rule.alert ? [rule.alert] : []))
  const runbook = section(operating, 'Runbook')
  const entries = [...runbook.matchAll(/^### (.+)$/gm)].map((match) => (match[1] as string).trim())

  it('has exactly one entry per alert of deploy/prometheus-rules.yml, no more, no less', () => {
    assert.ok(alerts.length > 0, 'the rules file has alerts')
    assert.deepEqual([...entries].sort(), [...alerts].sort())
  })

  it('says for each alert what it means, what to check and what to do', () => {
    for (const [n, entry] of runbook.split(/^### /m).slice(1).entries()) {
      for (const part of ['**Means**', '**Check**', '**Do**']) {
        assert.ok(entry.includes(part), `${entries[n]}: no ${part}`)
      }
    }
  })
})
