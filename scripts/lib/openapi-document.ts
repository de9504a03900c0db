// Renders the OpenAPI document exactly as a default-configured server serves it (real app, in-memory
// SQLite store), formatted as committed in openapi.json.
import { pino } from 'pino'
import { buildApp } from '../../src/app.js'
import {
  DEFAULT_AUTH_FAILURES_PER_MINUTE,
  DEFAULT_HOST,
  DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_PORT,
  DEFAULT_RATE_LIMIT_PER_MINUTE,
} from '../../src/config.js'
import { createKeyVerifier } from '../../src/http/pipeline/key-cache.js'
import { openApiText } from '../../src/http/routes/openapi.js'
import { openStore } from '../../src/store/index.js'

/** openapi.json's expected text: the served document, 2-space indented, with a final newline. */
export async function renderOpenApi(): Promise<string> {
  const store = await openStore({ dialect: 'sqlite', path: ':memory:' })
  const logger = pino({ level: 'silent' })
  await store.migrate()
  const keys = await createKeyVerifier(store.apiKeys, [], logger)
  const app = await buildApp({
    config: {
      publicUrl: undefined,
      host: DEFAULT_HOST,
      port: DEFAULT_PORT,
      rateLimitPerMinute: DEFAULT_RATE_LIMIT_PER_MINUTE,
      authFailuresPerMinute: DEFAULT_AUTH_FAILURES_PER_MINUTE,
      maxConnections: DEFAULT_MAX_CONNECTIONS,
      corsOrigins: [],
      trustProxy: [],
      idempotencyRecordsPerKey: DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY,
    },
    store,
    keys,
    cursorKey: await store.loadCursorKey(),
    logger,
  })
  try {
    await app.ready()
    return openApiText(app)
  } finally {
    keys.close()
    await app.close()
    await store.close()
  }
}
