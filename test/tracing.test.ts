// OpenTelemetry tracing of `serve` (docs/deploying.md, "Tracing"): off unless an OTLP endpoint is
// set; on, a caller's traceparent continues into an HTTP server span with database spans under it,
// exported to an OTLP/HTTP receiver (this test's own, on 127.0.0.1), and log lines carry the ids.
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { describeEachDatabase, freshDatabase, tempDir } from '../scripts/lib/test-server.js'
import { ConfigError, loadConfig } from '../src/config.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, startServe, within } from './support/cli-process.js'

const API_KEY = 'Tr4ce-T3st-k9Qz7-Wm2Lp-Xv8Rb-Hd5Nc'
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'

/** One span as OTLP/JSON carries it (ids in hex; kind 2 = SERVER, 3 = CLIENT). */
interface ExportedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes: Array<{ key: string; value: Record<string, unknown> }>
}

/** An OTLP/HTTP receiver on 127.0.0.1 that keeps every span and resource posted to /v1/traces as JSON. */
async function startReceiver(): Promise<{
  url: string
  spans: ExportedSpan[]
  resources: Array<Record<string, unknown>>
  requests: number
  close(): Promise<void>
}> {
  const state = { spans: [] as ExportedSpan[], resources: [] as Array<Record<string, unknown>>, requests: 0 }
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      state.requests++
      if (request.url !== '/v1/traces' || !request.headers['content-type']?.startsWith('application/json')) {
        response.writeHead(415).end()
        return
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{
          resource: { attributes: ExportedSpan['attributes'] }
          scopeSpans: Array<{ spans: ExportedSpan[] }>
        }>
      }
      for (const resourceSpans of body.resourceSpans) {
        state.resources.push(attributes(resourceSpans.resource.attributes))
        for (const scope of resourceSpans.scopeSpans) state.spans.push(...scope.spans)
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  })
}

function attributes(list: ExportedSpan['attributes']): Record<string, unknown> {
  return Object.fromEntries(list.map(({ key, value }) => [key, Object.values(value)[0]]))
}

/** Resolves once `find` returns something, polling the receiver's state; fails after 10 s. */
async function eventually<T>(find: () => T | undefined, what: string): Promise<T> {
  return within(
    (async () => {
      for (;;) {
        const found = find()
        if (found !== undefined) return found
        await new Promise((resolve) => setImmediate(resolve))
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    })(),
    10_000,
    `no ${what} was exported`,
  )
}

describe('tracing configuration (OTEL_*)', () => {
  it('is off unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set', () => {
    assert.equal(loadConfig({}, '/w').tracing, undefined)
    assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, '/w').tracing, {
      protocol: 'http/protobuf',
    })
    assert.deepEqual(
      loadConfig(
        { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
        '/w',
      ).tracing,
      { protocol: 'http/json' },
    )
  })

  it('stays off with OTEL_SDK_DISABLED=true', () => {
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }, '/w').tracing, undefined)
  })

  it('refuses gRPC and unknown protocols, and an endpoint that is not a URL, naming the variable', () => {
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, '/w'),
      (error: unknown) => error instanceof ConfigError && error.variable === 'OTEL_EXPORTER_OTLP_PROTOCOL',
    )
    assert.throws(
      () => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318 ' }, '/w'),
      (error: unknown) => error instanceof ConfigError && error.variable === 'OTEL_EXPORTER_OTLP_ENDPOINT',
    )
  })
})

describeEachDatabase('tracing of `serve` with OTEL_EXPORTER_OTLP_ENDPOINT set', (kind) => {
  const dir = tempDir()
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let server: ServeProcess
  let drop = async () => {}
  before(async () => {
    assertBuilt()
    receiver = await startReceiver()
    const database = await freshDatabase(kind, dir.path)
    drop = database.drop
    server = await startServe(
      cliEnv({
        DATABASE_URL: database.url,
        API_KEYS: API_KEY,
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'animal-store-under-test',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      }),
    )
  })
  after(async () => {
    server?.kill()
    killLeftovers()
    await receiver?.close()
    await drop()
    dir.remove()
  })

  const send = (method: string, path: string, parentSpanId: string, body?: unknown) =>
    fetch(`${server.origin}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${API_KEY}`,
        traceparent: `00-${TRACE_ID}-${parentSpanId}-01`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })

  const serverSpan = (parentSpanId: string) =>
    eventually(() => receiver.spans.find((span) => span.parentSpanId === parentSpanId && span.kind === 2), 'server span')

  const databaseSpanUnder = (parent: ExportedSpan) =>
    eventually(
      () =>
        receiver.spans.find((span) => {
          const found = attributes(span.attributes)
          return (
            span.parentSpanId === parent.spanId &&
            span.kind === 3 &&
            (found['db.system.name'] ?? found['db.system']) !== undefined
          )
        }),
      `database span under ${parent.name}`,
    )

  it("continues the caller's traceparent: getPet's server span has its trace id and parent, a route name, a database span under it", async () => {
    const created = await send('POST', '/v1/pets', '00f067aa0ba902b7', { name: 'Traced', categoryId: 1 })
    assert.equal(created.status, 201)
    const { id } = (await created.json()) as { id: number }
    const response = await send('GET', `/v1/pets/${id}`, '00f067aa0ba902b8')
    assert.equal(response.status, 200)
    assert.equal(response.headers.get('traceparent'), null, 'nothing is echoed to the client')

    const get = await serverSpan('00f067aa0ba902b8')
    assert.equal(get.traceId, TRACE_ID)
    assert.equal(get.name, 'GET /v1/pets/:petId')
    assert.equal(attributes(get.attributes)['http.route'], '/v1/pets/:petId')
    const read = await databaseSpanUnder(get)
    assert.equal(read.traceId, TRACE_ID)
    const system = attributes(read.attributes)
    assert.equal(system['db.system.name'] ?? system['db.system'], kind === 'sqlite' ? 'sqlite' : 'postgresql')

    const post = await serverSpan('00f067aa0ba902b7')
    assert.equal(post.name, 'POST /v1/pets')
    const write = await databaseSpanUnder(post)
    if (kind === 'sqlite') assert.equal(write.name, 'insertPet pets', 'the writer-thread round trip')
    assert.equal(receiver.resources.at(-1)?.['service.name'], 'animal-store-under-test')
  })

  it('exports the peer as client.address, not X-Forwarded-For, and no query value', async () => {
    const response = await fetch(`${server.origin}/v1/pets?limit=1&api_key=ask_leaked_in_query`, {
      headers: {
        authorization: `Bearer ${API_KEY}`,
        traceparent: `00-${TRACE_ID}-00f067aa0ba902c1-01`,
        'x-forwarded-for': '6.6.6.6',
      },
    })
    assert.equal(response.status, 400, 'an unknown parameter')
    const span = attributes((await serverSpan('00f067aa0ba902c1')).attributes)
    assert.equal(span['client.address'], '127.0.0.1')
    assert.equal(span['url.query'], 'limit=REDACTED&api_key=REDACTED')
    assert.ok(!JSON.stringify(receiver.spans).includes('ask_leaked_in_query'), 'the value reaches no span')
  })

  it("writes the request's trace_id and span_id on its log line", async () => {
    const response = await send('GET', '/v1/pets?limit=1', '00f067aa0ba902b9')
    assert.equal(response.status, 200)
    const span = await serverSpan('00f067aa0ba902b9')
    const line = await server.waitForLine(new RegExp(`"span_id":"${span.spanId}"`))
    const logged = JSON.parse(line) as Record<string, unknown>
    assert.equal(logged.msg, 'request')
    assert.equal(logged.trace_id, TRACE_ID)
    assert.equal(logged.route, '/v1/pets')
  })

  it('starts a new trace for a request without traceparent, and traces no metrics scrape', async () => {
    assert.equal((await fetch(`${server.origin}/healthz`)).status, 200)
    const probe = await eventually(
      () => receiver.spans.find((span) => span.name === 'GET /healthz'),
      'span for a request without traceparent',
    )
    assert.notEqual(probe.traceId, TRACE_ID)
    assert.equal(probe.parentSpanId ?? '', '')
    assert.equal((await fetch(`${server.metricsOrigin}/metrics`)).status, 200)
    assert.equal((await fetch(`${server.origin}/healthz`)).status, 200)
    await eventually(
      () => (receiver.spans.filter((span) => span.name === 'GET /healthz').length >= 2 ? true : undefined),
      'second probe',
    )
    assert.equal(
      receiver.spans.some((span) => attributes(span.attributes)['url.path'] === '/metrics'),
      false,
    )
  })
})

describe('`serve` without an OTLP endpoint', () => {
  const dir = tempDir()
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('loads no tracing: log lines carry no trace_id, and a traceparent is ignored', async () => {
    const server = await startServe(cliEnv({ DATABASE_URL: `sqlite:${dir.path}/off.db`, API_KEYS: API_KEY }))
    try {
      const response = await fetch(`${server.origin}/v1/pets`, {
        headers: {
          authorization: `Bearer ${API_KEY}`,
          traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`,
          'x-request-id': 'untraced-1',
        },
      })
      assert.equal(response.status, 200)
      await server.stop('SIGTERM')
      const line = server
        .stdout()
        .split('\n')
        .find((each) => each.includes('"reqId":"untraced-1"'))
      assert.ok(line, server.stdout())
      assert.doesNotMatch(line, /trace_id|span_id/)
    } finally {
      server.kill()
    }
  })
})
