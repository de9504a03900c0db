// A start while the database cannot be reached (a restart, a failover, a fleet that comes up before
// its database) waits for it instead of failing: the start's database steps are tried again with
// back-off, each failure logged, and meanwhile the port is held by the starting app (/healthz 200,
// /readyz 503), so an orchestrator does not restart the process in a loop that outlasts the outage.
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { buildStartingApp } from '../http/starting-app.js'
import { StoreUnavailableError } from '../store/index.js'

/** First and longest pause (ms) between two tries; each pause doubles the one before. */
const FIRST_PAUSE_MS = 250
const LONGEST_PAUSE_MS = 2000

/**
 * Resolves to what `steps` resolve to. While they reject with StoreUnavailableError they are run
 * again after a pause (250 ms doubling to 2 s), for at most `waitMs` (ms) in all, and from
 * the first such failure on, `hold` (when given) is listened on by the starting app until the steps
 * succeed or the wait ends. Rejects with the steps' last error when it is not StoreUnavailableError
 * or the wait is over; with the listen error if `hold` cannot be listened on.
 */
async function whileDatabaseUnavailable<T>(
  steps: () => Promise<T>,
  logger: Logger,
  waitMs: number,
  hold?: { host: string; port: number },
): Promise<T> {
  const giveUpAt = Date.now() + waitMs
  let starting: ReturnType<typeof buildStartingApp> | undefined
  try {
    for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, LONGEST_PAUSE_MS)) {
      try {
        return await steps()
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || Date.now() + pause > giveUpAt) throw error
        logger.warn(
          { cause: error.message, driverCode: error.driverCode, retryInMs: pause },
          `the database is unavailable; starting once it answers (giving up ${Math.round((giveUpAt - Date.now()) / 1000)} s from now)`,
        )
        if (hold && !starting) {
          starting = buildStartingApp(logger)
          await starting.listen({ host: hold.host, port: hold.port })
        }
        await new Promise((resolve) => setTimeout(resolve, pause))
      }
    }
  } finally {
    await starting?.close()
  }
}

/**
 * Runs the start's database `steps`. On PostgreSQL, an unreachable server is waited for, up to
 * DATABASE_START_WAIT_MS; the port is held meanwhile unless `isWorker` (the primary waited and holds it).
 * On SQLite a failure is not an outage that passes by itself (the file is local): the start fails.
 */
export function startOnDatabase<T>(config: Config, logger: Logger, isWorker: boolean, steps: () => Promise<T>): Promise<T> {
  if (config.database.dialect === 'sqlite') return steps()
  return whileDatabaseUnavailable(steps, logger, config.databaseStartWaitMs, isWorker ? undefined : config)
}
