// GET /metrics on a listener of its own (METRICS_HOST:METRICS_PORT, by default 127.0.0.1:9464), never
// on the public port: the metrics need no key, so they must not be reachable where clients are.
import type { Server } from 'node:http'
import type { Registry } from 'prom-client'
import { capConnections } from '../connection/connection-cap.js'
import { SERVER_TIMEOUTS } from '../connection/timeouts.js'
import { createServer } from '../node-http.js'

/**
 * Connections the metrics listener keeps open at most; past it the longest-idle (a scraper's kept-alive
 * socket, or one that has sent nothing yet) makes room, as on the public listener (connection-cap.ts).
 */
export const METRICS_MAX_CONNECTIONS = 16

/** How GET /metrics gets its text: this process's registry, or (cluster primary) every worker's, summed. */
export type MetricsSource = () => Promise<{ contentType: string; text: string }>

/** A running metrics listener. */
export interface MetricsServer {
  /** The address and port it listens on (the port is the real one when 0 was asked for). */
  readonly address: string
  readonly port: number
  /** Stops listening and closes idle connections; resolves when closed. */
  close(): Promise<void>
}

/** The metrics of `registry` itself, as GET /metrics serves them. */
export function registrySource(registry: Registry): MetricsSource {
  return async () => ({ contentType: registry.contentType, text: await registry.metrics() })
}

/**
 * Starts a plain HTTP listener on `host`:`port` that answers GET (and HEAD) /metrics with the text
 * of `source` (200), any other path 404, any other method 405 with `Allow: GET, HEAD`, and 503 when
 * `source` fails (reported to `onError`; the cause is never sent). Its limits are small: it serves
 * one scraper, at most METRICS_MAX_CONNECTIONS connections (silent ones make room, so they cannot
 * lock the scraper out). Rejects when it cannot listen, with a message naming METRICS_PORT (EADDRINUSE …).
 */
export async function startMetricsServer(
  source: MetricsSource,
  { host, port }: { host: string; port: number },
  onError: (error: unknown) => void,
): Promise<MetricsServer> {
  // The public listener's request timeouts, checked as often: a connection that sends nothing is
  // closed within seconds even when the cap is not reached (Node checks every 30 s by default).
  const { headersTimeout, requestTimeout, connectionsCheckingInterval } = SERVER_TIMEOUTS
  const options = { headersTimeout, requestTimeout, connectionsCheckingInterval }
  const server: Server = createServer(options, (request, response) => {
    const path = (request.url ?? '').split('?')[0]
    const answer = (status: number, text: string, headers: Record<string, string> = {}) => {
      response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers })
      response.end(request.method === 'HEAD' ? undefined : text)
    }
    if (path !== '/metrics') return answer(404, 'Not found: the metrics are at /metrics.\n')
    if (request.method !== 'GET' && request.method !== 'HEAD') return answer(405, 'Method not allowed.\n', { allow: 'GET, HEAD' })
    source().then(
      ({ contentType, text }) => answer(200, text, { 'content-type': contentType }),
      (error: unknown) => {
        onError(error)
        answer(503, 'The metrics could not be collected.\n')
      },
    )
  })
  capConnections(server, METRICS_MAX_CONNECTIONS)
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new Error(
          `the metrics listener cannot listen on ${host}:${port} (${error.code ?? error.message}): set METRICS_PORT (and METRICS_HOST), or METRICS_ENABLED=false`,
          { cause: error },
        ),
      ),
    )
    server.listen(port, host, resolve)
  })
  const address = server.address()
  if (typeof address !== 'object' || address === null) throw new Error('the metrics listener has no TCP address')
  return {
    address: address.address,
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeIdleConnections()
      }),
  }
}
