// Each answered request's log line and metrics (src/http/observability/request-record.ts): written after the
// responses of the event loop's turn, in order, none lost, and at once when tracing needs the span.
import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { createMetricsRegistry, createRequestMetrics } from '../../src/http/observability/metrics.js'
import { type AnsweredRequest, createRequestRecorder } from '../../src/http/observability/request-record.js'
import { createLogger } from '../../src/logger.js'

/** A real pino logger writing into an array of parsed lines, and a real metrics registry. */
function recorderParts() {
  const lines: Array<Record<string, unknown>> = []
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>)
      done()
    },
  })
  const logger = createLogger('info', sink)
  const registry = createMetricsRegistry({
    database: 'sqlite',
    poolStats: () => ({ total: 0, inUse: 0, waiting: 0 }),
    idempotencyRecordsEvicted: () => 0,
    keyReloadFailures: () => 0,
    logStdoutFailures: () => 0,
  })
  const answered = (reqId: string, status: number): AnsweredRequest => ({
    log: logger,
    fields: { reqId, status },
    operation: 'getPet',
    method: 'GET',
    status,
    durationMs: 1.5,
  })
  const counted = async (status: number) =>
    (await registry.getSingleMetric('http_requests_total')?.get())?.values.find((each) => each.labels.status === String(status))
      ?.value ?? 0
  return { lines, metrics: createRequestMetrics(registry), answered, counted }
}

describe('recording answered requests (log line and metrics)', () => {
  it('writes nothing during the turn that answered, then every line in order on the next', async () => {
    const { lines, metrics, answered, counted } = recorderParts()
    const recorder = createRequestRecorder(metrics, { atOnce: false })
    recorder.record(answered('a', 200))
    recorder.record(answered('b', 404))
    recorder.record(answered('c', 200))
    assert.equal(lines.length, 0)
    assert.equal(await counted(200), 0)
    await nextTurn()
    assert.deepEqual(
      lines.map((line) => [line.msg, line.reqId, line.status]),
      [
        ['request', 'a', 200],
        ['request', 'b', 404],
        ['request', 'c', 200],
      ],
    )
    assert.equal(await counted(200), 2)
    assert.equal(await counted(404), 1)
  })

  it('flush writes what is still waiting at once (the app closing), and the later turn adds nothing twice', async () => {
    const { lines, metrics, answered, counted } = recorderParts()
    const recorder = createRequestRecorder(metrics, { atOnce: false })
    recorder.record(answered('a', 201))
    recorder.flush()
    assert.deepEqual(
      lines.map((line) => line.reqId),
      ['a'],
    )
    await nextTurn()
    assert.equal(lines.length, 1)
    assert.equal(await counted(201), 1)
  })

  it('with tracing on, writes each line at once, inside the turn that answered', async () => {
    const { lines, metrics, answered, counted } = recorderParts()
    const recorder = createRequestRecorder(metrics, { atOnce: true })
    recorder.record(answered('a', 200))
    assert.deepEqual(
      lines.map((line) => line.reqId),
      ['a'],
    )
    assert.equal(await counted(200), 1)
  })
})
