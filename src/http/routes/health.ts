// Probes for load balancers and orchestrators, outside /v1 and without authentication:
// /healthz (the process answers) and /readyz (the database answers too, and the instance is not
// shutting down).
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../errors.js'
import { unavailableCause } from '../observability/unavailable-log.js'

/**
 * Registers GET /healthz and GET /readyz. `ping` rejects when the database cannot be reached; /readyz
 * is 503 from the start of a shutdown's drain too (app.shutdown, shutdown.ts).
 */
export async function healthRoutes(app: FastifyInstance, { ping }: { ping: () => Promise<void> }): Promise<void> {
  const config = { public: true }
  app.get('/healthz', { config, schema: { hide: true } }, async () => ({ status: 'ok' }))
  app.get('/readyz', { config, schema: { hide: true } }, async (request) => {
    // Draining (shutdown.ts): balancers take the instance out while it still serves what they send.
    if (app.shutdown.draining) throw new ApiError('service_unavailable', { message: 'The instance is shutting down.' })
    try {
      await ping()
    } catch (error) {
      const unavailable = unavailableCause(error)
      if (unavailable) app.unavailableLog(unavailable, request)
      else request.log.warn({ reqId: request.id, err: error }, 'readiness check failed')
      throw new ApiError('service_unavailable', { message: 'The database is not reachable.' })
    }
    return { status: 'ready' }
  })
}
