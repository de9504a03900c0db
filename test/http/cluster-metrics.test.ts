// WORKERS=N: the primary's scrape must survive a worker that is going away. Between a worker's channel
// closing and its exit being seen, node:cluster keeps it in cluster.workers; a scrape in that window
// once sent to it, which emitted an 'error' that ended the primary (and so every worker).
// This test process is the primary. Its worker closes its channel and then stays alive until its
// stdin closes, so the window (listed, channel closed) lasts until the test ends it. (A worker that
// exits at once does not always make one: when the primary sees the exit before the channel's close,
// node:cluster unlists the worker before 'disconnect' is emitted.)
import assert from 'node:assert/strict'
import cluster from 'node:cluster'
import { once } from 'node:events'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { tempDir } from '../../scripts/lib/test-server.js'
import { createClusterMetrics, WORKER_RESTARTS_METRIC } from '../../src/server/cluster-metrics.js'

describe('the cluster primary’s GET /metrics', () => {
  const dir = tempDir()
  after(() => dir.remove())

  it('answers from a worker whose channel has closed, at once and without an error', async () => {
    const script = join(dir.path, 'worker.mjs')
    // cluster.worker.disconnect() (unlike process.disconnect()) tells node:cluster the worker is not
    // to exit when its channel closes; the pending stdin keeps it alive until the primary closes it.
    writeFileSync(script, "import cluster from 'node:cluster'\ncluster.worker.disconnect()\nprocess.stdin.resume()\n")
    cluster.setupPrimary({ exec: script, execArgv: [], silent: true })
    const metrics = createClusterMetrics()
    const worker = cluster.fork()
    const errors: unknown[] = []
    worker.on('error', (error) => errors.push(error))
    // Inside a 'disconnect' listener the worker, alive, is still one of cluster.workers: the window.
    let started = 0
    const scrape = await new Promise<ReturnType<typeof metrics.source>>((resolve) =>
      worker.once('disconnect', () => {
        assert.ok(Object.values(cluster.workers ?? {}).includes(worker), 'the worker is still listed')
        assert.equal(worker.isConnected(), false)
        started = performance.now()
        resolve(metrics.source())
      }),
    )
    const { text } = await scrape
    // Without waiting for an answer that cannot come (2 s per worker).
    assert.ok(performance.now() - started < 1_000, `${performance.now() - started} ms`)
    assert.match(text, new RegExp(`^${WORKER_RESTARTS_METRIC} 0$`, 'm'))
    const exited = once(worker, 'exit')
    worker.process.stdin?.end()
    const [code] = await exited
    assert.equal(code, 0)
    assert.ok(!Object.values(cluster.workers ?? {}).includes(worker), 'the worker is unlisted once it exited')
    // An unhandled send error would have ended this process; a handled one must not reach the worker either.
    assert.deepEqual(errors, [])
  })
})
