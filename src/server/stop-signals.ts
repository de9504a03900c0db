// Which SIGTERM and SIGINT start a `serve` process's graceful stop, repeat it, or end it at once
// (docs/operating.md, "Stopping the service"), and how a WORKERS primary passes its stop on to the
// workers: as a message on their IPC channel, never as a signal, so that a worker the signal reached
// directly (sent to the whole process group, as systemd and `kill -TERM -PGID` do) is not told twice.
import cluster, { type Worker } from 'node:cluster'
import type { Logger } from 'pino'

/**
 * How long (ms) after a stop began a SIGTERM is the same stop, not an order to end at once: a
 * supervisor that signals the main process and then its whole group (systemd with an `ExecStop=`
 * that kills the main process) sends two within milliseconds. A person who wants a drain cut short
 * sends the second one later than this.
 */
export const SIGTERM_REPEAT_WINDOW_MS = 1_000

/** The signals that stop a `serve` process. */
export type StopSignal = 'SIGTERM' | 'SIGINT'

/** What a process does when it is told to stop. */
export interface StopActions {
  /** The first stop: close gracefully (SIGTERM drains first, SIGINT does not). Called once. */
  stop(signal: StopSignal): void
  /** A later, deliberate signal: end at once, cutting the stop short. Called at most once, after `stop`. */
  now(signal: StopSignal): void
}

/** The primary's message to a worker: stop as on `signal`, or (`now`) end at once. */
interface StopMessage {
  type: typeof STOP_MESSAGE
  signal: StopSignal
  now: boolean
}

const STOP_MESSAGE = 'animal-store:stop'
/** A worker's message to the primary: from now on it takes its stop as a StopMessage. */
const LISTENING_MESSAGE = 'animal-store:stop-listening'

/**
 * Listens, for the rest of the process's life, for SIGTERM and SIGINT (and in a cluster worker for
 * the primary's StopMessage). The first calls `actions.stop`. Then a SIGTERM within
 * SIGTERM_REPEAT_WINDOW_MS of the first, the primary passing on a stop, and in a worker whose stop
 * the primary's message began the first signal of that kind within the window, are the same stop (the
 * first logged at info); any other signal (SIGINT again, SIGTERM later than that) and the primary's
 * `now` call `actions.now`, logged as a warning. Nothing else is done: the caller closes and exits.
 */
export function onStopSignals(logger: Logger, actions: StopActions): void {
  let stoppedAt: number | undefined
  let endingNow = false
  // A stop the primary's message began: the signal sent to the whole group may still be on its way
  // here (the primary took its own first), and is then the same stop, SIGINT too.
  let groupSignalAhead: StopSignal | undefined
  const receive = (signal: StopSignal, fromPrimary: boolean, now: boolean) => {
    if (stoppedAt === undefined) {
      stoppedAt = Date.now()
      if (fromPrimary) groupSignalAhead = signal
      actions.stop(signal)
      if (!now) return
    }
    const afterMs = Date.now() - stoppedAt
    if (fromPrimary && !now) return // a stop the signal to the whole group began here already
    const sameStop = signal === 'SIGTERM' || signal === groupSignalAhead
    groupSignalAhead = undefined
    if (!fromPrimary && sameStop && afterMs <= SIGTERM_REPEAT_WINDOW_MS) {
      logger.info({ signal, afterMs }, `${signal} again ${afterMs} ms into the stop: the same stop`)
      return
    }
    if (endingNow) return
    endingNow = true
    const by = fromPrimary ? ' (passed on by the primary)' : ''
    logger.warn({ signal, afterMs }, `${signal} again ${afterMs} ms into the stop${by}: exiting at once`)
    actions.now(signal)
  }
  process.on('SIGTERM', () => receive('SIGTERM', false, false))
  process.on('SIGINT', () => receive('SIGINT', false, false))
  if (cluster.isWorker) {
    process.on('message', (message: Partial<StopMessage> | null) => {
      if (message?.type === STOP_MESSAGE && (message.signal === 'SIGTERM' || message.signal === 'SIGINT'))
        receive(message.signal, true, message.now === true)
    })
    // Without a callback, a channel closed meanwhile (the primary gone) would throw in an 'error' event.
    process.send?.({ type: LISTENING_MESSAGE }, undefined, undefined, () => {})
  }
}

/** How the primary tells one worker to stop. */
export interface WorkerStops {
  /**
   * Passes `signal` on to `worker` as a StopMessage once the worker listens for one; before that (it
   * is still starting) as SIGTERM, or SIGKILL when `now`, whose default actions end it.
   */
  pass(worker: Worker, signal: StopSignal, now: boolean): void
  /**
   * Resolves once `worker` takes its stop as a StopMessage (it armed its graceful close); never
   * rejects: the caller also watches for the worker's exit.
   */
  taking(worker: Worker): Promise<void>
}

/** Starts following which workers take their stop as a message (call in the primary before forking). */
export function watchWorkerStops(): WorkerStops {
  const listening = new WeakSet<Worker>()
  cluster.on('message', (worker, message: { type?: string } | null) => {
    if (message?.type === LISTENING_MESSAGE) listening.add(worker)
  })
  return {
    taking(worker) {
      if (listening.has(worker)) return Promise.resolve()
      return new Promise((resolve) => {
        const onMessage = (message: { type?: string } | null) => {
          if (message?.type !== LISTENING_MESSAGE) return
          worker.off('message', onMessage)
          resolve()
        }
        worker.on('message', onMessage)
      })
    },
    pass(worker, signal, now) {
      if (worker.isDead()) return
      if (listening.has(worker) && worker.isConnected()) {
        const message: StopMessage = { type: STOP_MESSAGE, signal, now }
        // A worker whose channel closes meanwhile is exiting already: the primary waits for its exit.
        worker.send(message, () => {})
      } else worker.process.kill(now ? 'SIGKILL' : 'SIGTERM')
    },
  }
}
