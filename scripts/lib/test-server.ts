// Starts real servers for tests: the real app on 127.0.0.1 with an ephemeral port, over a real
// SQLite file in a fresh temporary folder; and a client that checks every response against openapi.json.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { parse as parseLossless } from 'lossless-json'
import { buildApp } from '../../src/app.js'
import { createKey } from '../../src/commands/keys.js'
import {
  DEFAULT_AUTH_FAILURES_PER_MINUTE,
  DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY,
  DEFAULT_MAX_CONNECTIONS,
  DEFAULT_RATE_LIMIT_PER_MINUTE,
  type LogLevel,
} from '../../src/config.js'
import { parseApiKeys } from '../../src/config-variables.js'
import { createMetricsRegistry } from '../../src/http/observability/metrics.js'
import { registrySource, startMetricsServer } from '../../src/http/observability/metrics-server.js'
import { createKeyVerifier, type KeyVerifier } from '../../src/http/pipeline/key-cache.js'
import { parseJsonNumber } from '../../src/int64.js'
import { createLogger } from '../../src/logger.js'
import { type DatabaseConfig, openStore, type Store } from '../../src/store/index.js'
import { assertMatchesContract } from './contract.js'
import { createDatabase, type PostgresServer, startPostgres } from './postgres-server.js'

/** A fresh temporary folder, removed by the returned function. */
export function tempDir(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'animal-store-test-'))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

/** A running test server and what a test may need of it. */
export interface TestServer {
  /** `http://127.0.0.1:PORT` (no `/v1`). */
  origin: string
  /** `http://127.0.0.1:PORT` of the metrics listener, when started with `metrics: true`. */
  metricsOrigin: string | undefined
  /** A stored, valid API key. */
  key: string
  store: Store
  app: FastifyInstance
  keys: KeyVerifier
  /** Every log line written so far, as text. */
  logs: string[]
  close(): Promise<void>
}

/** The databases a suite runs on: TEST_DATABASES (set by scripts/test.ts), else SQLite only. */
export type TestDatabase = 'sqlite' | 'postgres'
export const TEST_DATABASES = (process.env.TEST_DATABASES ?? 'sqlite').split(',') as TestDatabase[]

/** `describe(title, …)` once per database in TEST_DATABASES, the title suffixed with its name. */
export function describeEachDatabase(title: string, suite: (database: TestDatabase) => void): void {
  for (const database of TEST_DATABASES) describe(`${title} [${database}]`, () => suite(database))
}

/**
 * A new, empty database on the suite's PostgreSQL, reached as the tests reach it: TEST_POSTGRES_URL
 * (directly, or through PgBouncer with TEST_POSTGRES_VIA=pgbouncer, see scripts/test.ts), created and
 * dropped on TEST_POSTGRES_ADMIN_URL when set (a pooler would hold connections to it).
 */
export async function createTestPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  return createDatabase(testPostgresServerUrl(), testPostgresUrl())
}

/** The suite's PostgreSQL as the tests reach it (TEST_POSTGRES_URL: directly, or through the suite's pooler). */
function testPostgresUrl(): string {
  const url = process.env.TEST_POSTGRES_URL
  if (!url) throw new Error('TEST_POSTGRES_URL is not set: run the suite with `npm test` (scripts/test.ts)')
  return url
}

/** The suite's PostgreSQL server itself: TEST_POSTGRES_ADMIN_URL when the suite runs through a pooler. */
export function testPostgresServerUrl(): string {
  return process.env.TEST_POSTGRES_ADMIN_URL ?? testPostgresUrl()
}

/**
 * A fresh, empty database of that kind: an SQLite file in `dir`, or a new database on the
 * suite's PostgreSQL (createTestPostgresDatabase). `drop` removes it.
 */
export async function freshDatabase(
  database: TestDatabase,
  dir: string,
): Promise<{ config: DatabaseConfig; url: string; drop: () => Promise<void> }> {
  if (database === 'sqlite') {
    const path = join(dir, 'test.db')
    return { config: { dialect: 'sqlite', path }, url: `sqlite:${path}`, drop: async () => {} }
  }
  const created = await createTestPostgresDatabase()
  return {
    config: { dialect: 'postgres', url: created.url, poolMax: 5, statementTimeoutMs: 5000 },
    url: created.url,
    drop: created.drop,
  }
}

/** Options of startServer. `database` defaults to SQLite; each server gets a fresh, empty database. */
export interface ServerOptions {
  database?: TestDatabase
  /** An existing database to use instead of a fresh one (it is not dropped on close). */
  databaseConfig?: DatabaseConfig
  /** API_KEYS entries, as the variable has them (`KEY[:scope=SCOPE][:rate-limit=N]`); none unless given. */
  apiKeys?: string[]
  publicUrl?: string
  keyRefreshMs?: number
  /** Count requests and serve GET /metrics on a listener of its own (as METRICS_ENABLED=true does). */
  metrics?: boolean
  /** RATE_LIMIT_PER_MINUTE; the production default unless given. */
  rateLimitPerMinute?: number
  /** AUTH_FAILURES_PER_MINUTE and MAX_CONNECTIONS; the production defaults unless given. */
  authFailuresPerMinute?: number
  maxConnections?: number
  /** IDEMPOTENCY_RECORDS_PER_KEY; the production default unless given. */
  idempotencyRecordsPerKey?: number
  /** TRUST_PROXY; none (X-Forwarded-For ignored) unless given. */
  trustProxy?: string[]
  /** CORS_ORIGINS; none (CORS off) unless given. */
  corsOrigins?: string[]
  /** The interval (ms) identical 503s are counted over in the log; the production one unless given. */
  unavailableLogIntervalMs?: number
  /** LOG_LEVEL of the captured log; `info` unless given. */
  logLevel?: LogLevel
}

/** Starts the real app with a fresh store and one stored key; close() stops it and deletes the data. */
export async function startServer(options: ServerOptions = {}): Promise<TestServer> {
  const dir = tempDir()
  const database = options.databaseConfig
    ? { config: options.databaseConfig, drop: async () => {} }
    : await freshDatabase(options.database ?? 'sqlite', dir.path)
  const store = await openStore(database.config)
  // A test may close the store itself (the database gone); close() below then closes it no second
  // time (pg's pool refuses that) and still removes the data.
  const closeStore = store.close
  let storeClosed: Promise<void> | undefined
  store.close = () => {
    storeClosed ??= closeStore()
    return storeClosed
  }
  await store.migrate()
  const { key } = await createKey(store.apiKeys, 'test')
  const logs: string[] = []
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(...String(chunk).split('\n').filter(Boolean))
      done()
    },
  })
  const logger = createLogger(options.logLevel ?? 'info', sink)
  const configuredKeys = parseApiKeys((options.apiKeys ?? []).join(','), 'API_KEYS')
  const keys = await createKeyVerifier(store.apiKeys, configuredKeys, logger, { refreshMs: options.keyRefreshMs })
  const metrics = options.metrics
    ? {
        registry: createMetricsRegistry({
          database: store.dialect,
          poolStats: () => store.poolStats(),
          idempotencyRecordsEvicted: () => store.idempotencyRecordsEvicted(),
          keyReloadFailures: () => keys.reloadFailures,
          logStdoutFailures: () => 0,
        }),
      }
    : undefined
  const app = await buildApp({
    config: {
      publicUrl: options.publicUrl,
      rateLimitPerMinute: options.rateLimitPerMinute ?? DEFAULT_RATE_LIMIT_PER_MINUTE,
      authFailuresPerMinute: options.authFailuresPerMinute ?? DEFAULT_AUTH_FAILURES_PER_MINUTE,
      maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
      corsOrigins: options.corsOrigins ?? [],
      trustProxy: options.trustProxy ?? [],
      idempotencyRecordsPerKey: options.idempotencyRecordsPerKey ?? DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY,
    },
    store,
    keys,
    cursorKey: await store.loadCursorKey(),
    logger,
    metrics,
    unavailableLogIntervalMs: options.unavailableLogIntervalMs,
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const metricsServer =
    metrics && (await startMetricsServer(registrySource(metrics.registry), { host: '127.0.0.1', port: 0 }, () => {}))
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  return {
    origin: `http://127.0.0.1:${port}`,
    metricsOrigin: metricsServer ? `http://127.0.0.1:${metricsServer.port}` : undefined,
    key,
    store,
    app,
    keys,
    logs,
    async close() {
      await Promise.all([app.close(), metricsServer?.close()])
      keys.close()
      await store.close()
      await database.drop()
      dir.remove()
    },
  }
}

/** What a test request may set. `key: null` sends no Authorization; `authorization` sends it raw. */
export interface RequestOptions {
  key?: string | null
  authorization?: string
  /** A value to send as JSON, or a string/Buffer to send as is. */
  body?: unknown
  headers?: Record<string, string>
}

/** A response, with the body parsed twice: `json` (JSON.parse) and `exact` (int64-exact). */
export interface TestResponse {
  status: number
  headers: Headers
  text: string
  json: any
  exact: any
}

/**
 * Sends one request to the server over real HTTP and asserts the response against openapi.json.
 * Objects in `body` are sent as JSON with bigint values written as exact digits.
 */
export async function call(
  server: TestServer,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers }
  const key = options.key === undefined ? server.key : options.key
  if (options.authorization !== undefined) headers.authorization = options.authorization
  else if (key !== null) headers.authorization = `Bearer ${key}`
  let body: string | Buffer | undefined
  if (typeof options.body === 'string' || Buffer.isBuffer(options.body)) body = options.body
  else if (options.body !== undefined) {
    body = toJson(options.body)
    headers['content-type'] ??= 'application/json'
  }
  const response = await fetch(server.origin + path, { method, headers, body })
  const text = await response.text()
  const seen = { status: response.status, headers: response.headers, text }
  assertMatchesContract(method, path, seen)
  const parsed = text && /json/.test(response.headers.get('content-type') ?? '')
  return {
    ...seen,
    json: parsed ? JSON.parse(text) : undefined,
    exact: parsed ? parseLossless(text, null, parseJsonNumber) : undefined,
  }
}

/** JSON text of `value`, with bigints written as their exact digits. */
export function toJson(value: unknown): string {
  const marked = JSON.stringify(value, (_key, item) => (typeof item === 'bigint' ? `@@${item}@@` : item))
  return marked.replace(/"@@(-?\d+)@@"/g, '$1')
}

/**
 * For a suite that stops and starts its database: before its tests, a PostgreSQL of its own and a
 * server on it (pool of 4, 2 s statement timeout); after them, both gone. The holder is filled in
 * by the `before` hook. It is reached directly, also with TEST_POSTGRES_VIA=pgbouncer: these suites
 * are about the service seeing its server go away and come back (connection errors, 503s, the pool
 * recovering); behind a pooler the service never sees that, PgBouncer does and holds the clients.
 */
export function ownPostgresWithServer(): { postgres: PostgresServer; server: TestServer } {
  const own = {} as { postgres: PostgresServer; server: TestServer }
  before(async () => {
    own.postgres = await startPostgres()
    own.server = await startServer({
      databaseConfig: { dialect: 'postgres', url: own.postgres.url, poolMax: 4, statementTimeoutMs: 2000 },
    })
  })
  after(async () => {
    await own.server?.close()
    await own.postgres?.destroy()
  })
  return own
}
