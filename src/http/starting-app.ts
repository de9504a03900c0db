// The app that holds the port while a start waits for its database (server/database-wait.ts):
// the process is alive (/healthz 200), not ready (/readyz 503), and every other request gets the
// JSON 503 `service_unavailable` with Retry-After, so an orchestrator neither restarts the process
// nor routes clients to it, and a client that reaches it anyway is told to retry.
import Fastify, { type FastifyBaseLogger, type FastifyInstance, LogController } from 'fastify'
import { ApiError, handleError } from './errors.js'

/** The message of every 503 the starting app answers. */
const STARTING_MESSAGE = 'The service is starting: its database is not reachable yet. Retry later.'

/** Builds the starting app (never listens itself): GET /healthz 200 `{"status":"ok"}`, anything else 503. */
export function buildStartingApp(logger: FastifyBaseLogger): FastifyInstance {
  const app = Fastify({ loggerInstance: logger, logController: new LogController({ disableRequestLogging: true }) })
  app.setErrorHandler(handleError)
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.setNotFoundHandler(() => {
    throw new ApiError('service_unavailable', { message: STARTING_MESSAGE })
  })
  return app
}
