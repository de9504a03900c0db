// Starting the metrics listener, for `serve` and the cluster primary. The API matters more than its
// metrics: when METRICS_PORT was left at its default and that port is taken (a second instance on
// the same host), the service runs without metrics and says so; a chosen port that is taken fails.
import type { Logger } from 'pino'
import type { Config } from '../config.js'
import { type MetricsServer, type MetricsSource, startMetricsServer } from '../http/observability/metrics-server.js'

/**
 * Starts GET /metrics on METRICS_HOST:METRICS_PORT from `source`. Resolves to the listener, or to
 * undefined (with a warning logged) when the default port cannot be used; rejects when a chosen one
 * cannot (the error names METRICS_PORT).
 */
export async function startMetricsListener(
  config: Pick<Config, 'metricsHost' | 'metricsPort' | 'metricsPortChosen'>,
  source: MetricsSource,
  logger: Logger,
  what: string,
): Promise<MetricsServer | undefined> {
  try {
    return await startMetricsServer(source, { host: config.metricsHost, port: config.metricsPort }, (error) =>
      logger.error({ err: error }, `${what} could not be collected`),
    )
  } catch (error) {
    if (config.metricsPortChosen) throw error
    logger.warn({ err: error }, 'metrics are not served: the default METRICS_PORT is taken; set METRICS_PORT to serve them')
    return undefined
  }
}
