// Under WORKERS, the end of a drain closes the port once for all workers: each worker closes its own
// socket (cluster.ts, workerListenOptions; or leaves node:cluster's one socket, which the primary
// closes once no worker is on it), and new connections go to the workers still listening. A worker
// that asked its clients to reconnect (`Connection: close`) before its siblings stopped listening
// would send those clients to a sibling just as that one closes: more connections opened in the
// instant a socket closes, which is when one can be reset with a request already sent on it (a
// balancer re-sends only idempotent ones). So each worker waits here until every worker has stopped
// listening: its clients then find the port refusing, and go elsewhere.
import cluster, { type Worker } from 'node:cluster'

/** Longest wait (ms) of a worker for the others (one that is stuck must not hold its own close). */
const LISTENERS_CLOSED_WAIT_MS = 1_000

const STOPPED_LISTENING = 'animal-store:stopped-listening'
const ALL_STOPPED_LISTENING = 'animal-store:all-stopped-listening'

/**
 * Resolves once no process accepts connections on this process's port any longer: at once outside a
 * cluster (the caller closed its listener); in a worker that has just closed its listener, once the
 * primary says every worker has, or after LISTENERS_CLOSED_WAIT_MS.
 */
export function whenNoWorkerListens(): Promise<void> {
  if (!cluster.isWorker || !process.send) return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      process.off('message', onMessage)
      resolve()
    }
    const onMessage = (message: { type?: string } | null) => {
      if (message?.type === ALL_STOPPED_LISTENING) done()
    }
    const timer = setTimeout(done, LISTENERS_CLOSED_WAIT_MS)
    process.on('message', onMessage)
    // Sent once this worker stopped listening (the caller closed its listener): it takes no
    // connection now.
    process.send?.({ type: STOPPED_LISTENING }, undefined, undefined, () => {})
  })
}

/**
 * In the primary: answers the workers waiting in whenNoWorkerListens once every worker alive has
 * stopped listening (a worker that exits counts as stopped). Call before forking.
 */
export function coordinateListenerClose(): void {
  const stopped = new Set<Worker>()
  const answerIfAll = () => {
    const alive = Object.values(cluster.workers ?? {}).filter((worker) => worker !== undefined && !worker.isDead())
    if (stopped.size === 0 || !alive.every((worker) => worker && stopped.has(worker))) return
    for (const worker of stopped) if (worker.isConnected()) worker.send({ type: ALL_STOPPED_LISTENING }, () => {})
    stopped.clear()
  }
  cluster.on('message', (worker, message: { type?: string } | null) => {
    if (message?.type !== STOPPED_LISTENING) return
    stopped.add(worker)
    answerIfAll()
  })
  cluster.on('exit', (worker) => {
    stopped.delete(worker)
    answerIfAll()
  })
}
