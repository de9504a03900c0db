// The service's pino logger: JSON lines to stdout (or a given stream), secrets redacted.
import { type DestinationStream, type Logger, pino } from 'pino'
import type { LogLevel } from './config.js'

/**
 * A pino logger at `level`. Any `authorization` header that reaches a log object is replaced by
 * `[redacted]` (docs/architecture.md, Secrets stay secret); keys are never passed to the logger in
 * the first place.
 */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const options = {
    level,
    redact: { paths: ['req.headers.authorization', 'headers.authorization', '*.authorization'], censor: '[redacted]' },
  }
  return destination ? pino(options, destination) : pino(options)
}
