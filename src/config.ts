// Configuration: the only reader of the environment. Every variable is validated once at start-up,
// defaulted, and frozen; a bad value names the variable. CONFIGURATION_VARIABLES documents each one
// (the README's table and `--help` are generated from it).
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'
import { isAbsolute, resolve } from 'node:path'
import { isStrongEnough, MIN_CONFIGURED_KEY_BITS, MIN_CONFIGURED_KEY_LENGTH } from './key-strength.js'
import type { DatabaseConfig } from './store/index.js'

/** pino levels accepted by LOG_LEVEL. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** The validated configuration (README "Configuration"). */
export interface Config {
  /** TCP port; 0 picks a free one. */
  readonly port: number
  readonly host: string
  readonly database: DatabaseConfig
  /** API_KEYS: keys accepted besides the stored ones; never logged. */
  readonly apiKeys: readonly string[]
  readonly logLevel: LogLevel
  /** Externally visible base URL ending in `/v1`, without a trailing slash; undefined when unset. */
  readonly publicUrl: string | undefined
  /** Worker processes sharing the port (WORKERS; `auto` = available CPUs). 1 = no cluster. */
  readonly workers: number
  /** Whether GET /metrics (Prometheus) is served, on its own listener (metricsHost:metricsPort). */
  readonly metricsEnabled: boolean
  /** Address of the metrics listener (METRICS_HOST): loopback by default, never the public listener. */
  readonly metricsHost: string
  /** TCP port of the metrics listener (METRICS_PORT); 0 picks a free one. */
  readonly metricsPort: number
  /** Whether METRICS_PORT was set (a taken port then fails start-up) rather than defaulted. */
  readonly metricsPortChosen: boolean
  /** Failed authentications per client address per minute, per process; 0 turns the limit off. */
  readonly authFailuresPerMinute: number
  /** Open client connections per process (server.maxConnections). */
  readonly maxConnections: number
  /** Requests per API key per minute, per process; 0 turns rate limiting off. */
  readonly rateLimitPerMinute: number
  /** SHUTDOWN_DRAIN_MS: how long (ms) a SIGTERM keeps serving with /readyz at 503 before closing. */
  readonly shutdownDrainMs: number
  /** DATABASE_START_WAIT_MS: how long (ms) a start waits for an unreachable PostgreSQL; 0 fails at once. */
  readonly databaseStartWaitMs: number
  /** Idempotency-Key records (each kept 24 h) one API key may hold, across the fleet. */
  readonly idempotencyRecordsPerKey: number
  /**
   * TRUST_PROXY: addresses and CIDR ranges (or `loopback`, `linklocal`, `uniquelocal`) of proxies whose
   * `X-Forwarded-For` names the client; empty = the socket's peer is the client.
   */
  readonly trustProxy: readonly string[]
  /** CORS_ORIGINS: browser origins (`https://app.example.com`) allowed to call the API; empty = CORS off. */
  readonly corsOrigins: readonly string[]
  /** OpenTelemetry tracing (src/tracing.ts): on when an OTLP endpoint is set; undefined = off, nothing loaded. */
  readonly tracing: TracingConfig | undefined
}

/** OTLP/HTTP encodings the trace exporter speaks (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not shipped. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const

/** How spans are exported; the OpenTelemetry SDK reads the endpoint and its other settings itself. */
export interface TracingConfig {
  readonly protocol: (typeof OTLP_PROTOCOLS)[number]
}

/** A configuration value that cannot be used; `variable` names it. The message never echoes secrets. */
export class ConfigError extends Error {
  readonly variable: string
  constructor(variable: string, message: string) {
    super(`${variable} ${message}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}

/** Default PORT and HOST: loopback, so nothing is exposed until HOST says so. */
export const DEFAULT_PORT = 8080
export const DEFAULT_HOST = '127.0.0.1'
/** Default LOG_LEVEL. */
export const DEFAULT_LOG_LEVEL: LogLevel = 'info'
/** Default DATABASE_STATEMENT_TIMEOUT_MS (ms), and its upper bound. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000
const MAX_STATEMENT_TIMEOUT_MS = 600_000
/** Upper bounds of DATABASE_POOL_MAX, WORKERS and RATE_LIMIT_PER_MINUTE. */
const MAX_POOL = 1000
const MAX_WORKERS = 64
const MAX_RATE_LIMIT_PER_MINUTE = 10_000_000

/** Default DATABASE_URL: an SQLite file under ./data, created on first use. */
export const DEFAULT_DATABASE_URL = 'sqlite:data/animal-store.db'

/**
 * Default PostgreSQL connections per process. Small on purpose: N instances × WORKERS × this must
 * stay under the server's max_connections (100 by default); node-postgres advises few per process.
 */
export const DEFAULT_POOL_MAX = 5

/**
 * Default RATE_LIMIT_PER_MINUTE: 60,000 requests per key per minute per process (1,000/s on
 * average): far above any one well-behaved client, low enough that one runaway key cannot take a
 * whole process. Load tests with one key should raise it or set 0.
 */
export const DEFAULT_RATE_LIMIT_PER_MINUTE = 60_000

/**
 * Default AUTH_FAILURES_PER_MINUTE: 60,000 requests without a valid key per client address per
 * minute (1,000/s), the same budget a key gets: far above a client being set up or having its key
 * rotated (and above test suites that send thousands of bad requests), low enough that one address
 * cannot keep a process hashing and refusing keys at full speed. Behind a balancer, set TRUST_PROXY
 * so that each client is counted by its own address rather than the balancer's.
 */
export const DEFAULT_AUTH_FAILURES_PER_MINUTE = 60_000

/**
 * Default MAX_CONNECTIONS: 10,000 open connections per process, above any balancer's pool, below
 * what the default file-descriptor limit and memory (a few KiB each) allow.
 */
export const DEFAULT_MAX_CONNECTIONS = 10_000
const MAX_MAX_CONNECTIONS = 1_000_000

/**
 * Default SHUTDOWN_DRAIN_MS: none, for a process run by hand (Ctrl-C, or SIGTERM with nothing in
 * front). The container image sets 5000: enough for a balancer polling /readyz every 1–2 s to see
 * two failures and stop sending. Capped so a typo cannot hold a shutdown for long.
 */
export const DEFAULT_SHUTDOWN_DRAIN_MS = 0
const MAX_SHUTDOWN_DRAIN_MS = 120_000

/**
 * Default DATABASE_START_WAIT_MS: 2 minutes, longer than a PostgreSQL restart or failover, so an
 * orchestrator's restart loop (whose back-off grows) never has to outlast the outage.
 */
export const DEFAULT_DATABASE_START_WAIT_MS = 120_000
const MAX_DATABASE_START_WAIT_MS = 3_600_000

/**
 * Default IDEMPOTENCY_RECORDS_PER_KEY: 10,000 records kept 24 h, a create with an Idempotency-Key
 * every 8.6 s around the clock, per key. It bounds one key's records to about 3–23 MB (314 B to
 * 2.3 KB each, docs/security.md) instead of the tens of GB a day the rate limit alone allows, and
 * keeps the count each new record costs (the key's records, on an index, up to this limit) near 1 ms.
 */
export const DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY = 10_000
const MAX_IDEMPOTENCY_RECORDS_PER_KEY = 10_000_000

/**
 * Default METRICS_PORT: 9464, the port commonly used for Prometheus exporters (OpenTelemetry's
 * default), apart from PORT so that a balancer in front of PORT never exposes the metrics.
 */
export const DEFAULT_METRICS_PORT = 9464

/**
 * One environment variable as operators see it: the README's configuration table and `--help` are
 * generated from CONFIGURATION_VARIABLES (scripts/config-doc.ts), so they cannot drift from here.
 */
export interface ConfigurationVariable {
  readonly name: string
  /** The default as shown, or `(none)`. */
  readonly default: string
  /** What it does and accepts (Markdown; its first sentence is the `--help` line). */
  readonly meaning: string
  /** Whether NAME_FILE may give the value instead (a secret mounted as a file). */
  readonly file?: boolean
}

/** Every variable loadConfig and loadCopyUrls read, in the order the README lists them. */
export const CONFIGURATION_VARIABLES: readonly ConfigurationVariable[] = [
  { name: 'PORT', default: `${DEFAULT_PORT}`, meaning: 'TCP port, 0–65535 (0 picks a free one).' },
  {
    name: 'HOST',
    default: DEFAULT_HOST,
    meaning: 'Address to listen on; `0.0.0.0` for all interfaces (behind a balancer or in a container).',
  },
  {
    name: 'DATABASE_URL',
    default: DEFAULT_DATABASE_URL,
    file: true,
    meaning:
      "The database: `sqlite:PATH`, `sqlite::memory:` (a throwaway store) or `postgres://USER:PASSWORD@HOST:PORT/DATABASE`. An SQLite path is relative to the working directory, or absolute; a missing folder is created 0700 and the file 0600, readable by the service's user alone. `postgresql://` works too; connection parameters such as `sslmode` go in the query string, as node-postgres reads them. Never echoed in errors.",
  },
  {
    name: 'DATABASE_POOL_MAX',
    default: `${DEFAULT_POOL_MAX}`,
    meaning: `PostgreSQL connections per process, 1–${MAX_POOL}. Instances × workers × this must stay below the server's \`max_connections\`.`,
  },
  {
    name: 'DATABASE_STATEMENT_TIMEOUT_MS',
    default: `${DEFAULT_STATEMENT_TIMEOUT_MS}`,
    meaning: `PostgreSQL: longest a statement (and a wait for a connection) may take, in ms, 1–${MAX_STATEMENT_TIMEOUT_MS}; past it the request gets 503.`,
  },
  {
    name: 'API_KEYS',
    default: '(none)',
    file: true,
    meaning: `Comma-separated keys accepted in addition to stored ones, for platforms that inject secrets. Each at least ${MIN_CONFIGURED_KEY_LENGTH} characters of \`A-Z a-z 0-9 - . _ ~ + /\` (then optional \`=\`) and random: an estimated ${MIN_CONFIGURED_KEY_BITS} bits or more, so repeated, alternating and sequential values are refused (\`src/key-strength.ts\`; \`openssl rand -base64 32\` makes a good one). Never logged or stored. When set, no first key is created or printed.`,
  },
  {
    name: 'LOG_LEVEL',
    default: DEFAULT_LOG_LEVEL,
    meaning: `Log level: ${LOG_LEVELS.map((level) => `\`${level}\``).join(', ')}.`,
  },
  {
    name: 'WORKERS',
    default: '1',
    meaning: `Processes sharing the port on this machine (node:cluster), 1–${MAX_WORKERS}, or \`auto\` for one per CPU. On SQLite, writes still go one at a time (WAL); reads scale.`,
  },
  {
    name: 'RATE_LIMIT_PER_MINUTE',
    default: `${DEFAULT_RATE_LIMIT_PER_MINUTE}`,
    meaning: 'Requests per API key per minute, per process (0 = off). See "Rate limits" below.',
  },
  {
    name: 'IDEMPOTENCY_RECORDS_PER_KEY',
    default: `${DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY}`,
    meaning: `Idempotency-Key records one API key may hold, 1–${MAX_IDEMPOTENCY_RECORDS_PER_KEY}, counted in the database (so across instances and workers). Each is kept 24 h and takes 0.3–2.3 KB. A create with a new Idempotency-Key past it is never refused: the API key's oldest record is deleted to make room (counted in \`animal_store_idempotency_records_evicted_total\`), so a retry then protects a create only while fewer than this many newer ones came from the same API key; expired records are deleted in the background every minute. The default keeps every record its full 24 h for one such create every 8.6 s on average per API key; raise it for busier keys.`,
  },
  {
    name: 'AUTH_FAILURES_PER_MINUTE',
    default: `${DEFAULT_AUTH_FAILURES_PER_MINUTE}`,
    meaning:
      'Requests without a valid API key accepted per client address per minute, per process (0 = no limit); past it they get 429 `rate_limited` instead of 401, and the connection is closed. Requests with a valid key are never counted.',
  },
  {
    name: 'MAX_CONNECTIONS',
    default: `${DEFAULT_MAX_CONNECTIONS}`,
    meaning: `Open client connections per process, 1–${MAX_MAX_CONNECTIONS}. A new connection past it closes the connection idle longest (between requests, or not yet sent a request), so idle sockets cannot lock clients out; only when every connection has a request in progress is the new one closed at once.`,
  },
  {
    name: 'DATABASE_START_WAIT_MS',
    default: `${DEFAULT_DATABASE_START_WAIT_MS}`,
    meaning: `PostgreSQL: how long (ms, 0–${MAX_DATABASE_START_WAIT_MS}) a start waits for a database it cannot reach, trying again every 0.25–2 s (each failure logged), while the port answers \`/healthz\` 200 and everything else 503; then it exits 1. \`0\` exits at once. On SQLite a start never waits.`,
  },
  {
    name: 'SHUTDOWN_DRAIN_MS',
    default: `${DEFAULT_SHUTDOWN_DRAIN_MS}`,
    meaning: `On SIGTERM, how long (ms, 0–${MAX_SHUTDOWN_DRAIN_MS}) to keep serving with \`/readyz\` answering 503 before closing, so balancers stop sending first; then connections are closed gracefully (see docs/deploying.md). The container image sets \`5000\`. SIGINT (Ctrl-C) does not wait.`,
  },
  {
    name: 'METRICS_ENABLED',
    default: 'true',
    meaning:
      'Serve Prometheus metrics at `GET /metrics`, on a listener of their own (no key needed there), never on `PORT`. Accepts `true/false`, `1/0`, `yes/no`, `on/off`.',
  },
  {
    name: 'METRICS_HOST',
    default: DEFAULT_HOST,
    meaning: 'Address of the metrics listener (the container image sets `0.0.0.0`, for a scraper on the container network).',
  },
  {
    name: 'METRICS_PORT',
    default: `${DEFAULT_METRICS_PORT}`,
    meaning:
      'Port of the metrics listener, 0–65535 (0 picks a free one); must differ from `PORT`. When set and taken, start-up fails; when left at the default and taken (a second instance on the host), the service runs without metrics and logs a warning.',
  },
  {
    name: 'PUBLIC_URL',
    default: '(none)',
    meaning:
      'The externally visible base URL, ending in `/v1`, such as `https://api.example.com/v1`: http or https, a host, no user or password, and written as browsers normalise it (no spaces, control characters, `"`, `<` or `>`; host in lower case). Written into the OpenAPI `servers` list (without it: `http://HOST:PORT/v1`, then the relative `/v1`) and used for `Location` and `Link` URLs; without it those are relative (`/v1/pets/1`). Production and staging are two deployments that differ only in this and their database.',
  },
  {
    name: 'TRUST_PROXY',
    default: '(none)',
    meaning:
      "Comma-separated addresses or CIDR ranges of the balancers in front of the service, e.g. `10.0.0.5,172.16.0.0/12` (also `loopback`, `linklocal`, `uniquelocal`). A request from one of them is taken to come from the address its `X-Forwarded-For` names (the right-most one not itself trusted): that address is the log line's `client` and what `AUTH_FAILURES_PER_MINUTE` counts. Unset: `X-Forwarded-For` is ignored and the client is the connection's peer, so behind a balancer every client shares its address. Never list addresses the public can connect from: a trusted `X-Forwarded-For` can name any address.",
  },
  {
    name: 'CORS_ORIGINS',
    default: '(none)',
    meaning:
      'Comma-separated browser origins allowed to call the API (CORS), each exactly as a browser sends it: `https://HOST[:PORT]` or `http://…`, no path, e.g. `https://app.example.com,http://localhost:5173`. Unset: CORS is off and no `Access-Control-*` header is sent. Preflights (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) are answered without a key; pages may send `Authorization`, `Content-Type`, `Idempotency-Key` and `X-Request-Id` and read `Idempotent-Replayed`, `Link`, `Location`, `RateLimit`, `RateLimit-Policy`, `Retry-After`, `Deprecation`, `Sunset`, `WWW-Authenticate` and `X-Request-Id`.',
  },
  {
    name: 'COPY_FROM_URL',
    default: '`DATABASE_URL`',
    file: true,
    meaning: '`copy` only: the database to copy from when `--from` is not given (any form `DATABASE_URL` takes).',
  },
  {
    name: 'COPY_TO_URL',
    default: '(none)',
    file: true,
    meaning:
      '`copy` only: the database to copy into when `--to` is not given. Pass PostgreSQL URLs here, not in flags (`ps` shows flags to every local user).',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    default: '(none)',
    meaning:
      'Turns on OpenTelemetry tracing: the base URL of an OTLP/HTTP collector, such as `http://otel-collector:4318` (spans go to its `/v1/traces`). Unset (and no `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): no tracing code is loaded. The SDK reads the other standard `OTEL_*` variables itself; see docs/deploying.md, "Tracing".',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    default: '(none)',
    meaning:
      'The full URL spans are sent to (`…/v1/traces`), instead of `OTEL_EXPORTER_OTLP_ENDPOINT`; setting it also turns tracing on.',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    default: 'http/protobuf',
    meaning: `How spans are encoded: ${OTLP_PROTOCOLS.map((protocol) => `\`${protocol}\``).join(' or ')} (gRPC is not supported).`,
  },
  {
    name: 'OTEL_SDK_DISABLED',
    default: 'false',
    meaning: '`true` keeps tracing off even when an endpoint is set.',
  },
]

/** PostgreSQL pool settings that apply when DATABASE_URL names PostgreSQL. */
export interface PoolSettings {
  poolMax: number
  statementTimeoutMs: number
}

/**
 * Reads and validates the configuration from `env` (relative SQLite paths resolve against `cwd`).
 * Throws ConfigError for the first bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): Config {
  const pool = {
    poolMax: parseInteger(env.DATABASE_POOL_MAX, 'DATABASE_POOL_MAX', DEFAULT_POOL_MAX, 1, MAX_POOL),
    statementTimeoutMs: parseInteger(
      env.DATABASE_STATEMENT_TIMEOUT_MS,
      'DATABASE_STATEMENT_TIMEOUT_MS',
      DEFAULT_STATEMENT_TIMEOUT_MS,
      1,
      MAX_STATEMENT_TIMEOUT_MS,
    ),
  }
  const database = parseDatabaseUrl(secretVariable(env, 'DATABASE_URL') ?? DEFAULT_DATABASE_URL, cwd, pool)
  const workers = env.WORKERS === 'auto' ? availableParallelism() : parseInteger(env.WORKERS, 'WORKERS', 1, 1, MAX_WORKERS)
  if (workers > 1 && database.dialect === 'sqlite' && database.path === ':memory:') {
    throw new ConfigError('WORKERS', 'must be 1 with DATABASE_URL=sqlite::memory: (each process would have its own empty store).')
  }
  const port = parsePort(env.PORT)
  const metricsPort = parseInteger(env.METRICS_PORT, 'METRICS_PORT', DEFAULT_METRICS_PORT, 0, 65535)
  if (metricsPort !== 0 && metricsPort === port) {
    throw new ConfigError('METRICS_PORT', 'must differ from PORT: the metrics have their own listener, off the public port.')
  }
  return Object.freeze({
    port,
    host: parseHost(env.HOST, 'HOST'),
    database: Object.freeze(database),
    apiKeys: Object.freeze(parseApiKeys(secretVariable(env, 'API_KEYS'))),
    logLevel: parseLogLevel(env.LOG_LEVEL),
    publicUrl: parsePublicUrl(env.PUBLIC_URL),
    workers,
    metricsEnabled: parseBoolean(env.METRICS_ENABLED, 'METRICS_ENABLED', true),
    metricsHost: parseHost(env.METRICS_HOST, 'METRICS_HOST'),
    metricsPort,
    metricsPortChosen: env.METRICS_PORT !== undefined && env.METRICS_PORT !== '',
    authFailuresPerMinute: parseInteger(
      env.AUTH_FAILURES_PER_MINUTE,
      'AUTH_FAILURES_PER_MINUTE',
      DEFAULT_AUTH_FAILURES_PER_MINUTE,
      0,
      MAX_RATE_LIMIT_PER_MINUTE,
    ),
    maxConnections: parseInteger(env.MAX_CONNECTIONS, 'MAX_CONNECTIONS', DEFAULT_MAX_CONNECTIONS, 1, MAX_MAX_CONNECTIONS),
    rateLimitPerMinute: parseInteger(
      env.RATE_LIMIT_PER_MINUTE,
      'RATE_LIMIT_PER_MINUTE',
      DEFAULT_RATE_LIMIT_PER_MINUTE,
      0,
      MAX_RATE_LIMIT_PER_MINUTE,
    ),
    trustProxy: Object.freeze(parseTrustProxy(env.TRUST_PROXY)),
    databaseStartWaitMs: parseInteger(
      env.DATABASE_START_WAIT_MS,
      'DATABASE_START_WAIT_MS',
      DEFAULT_DATABASE_START_WAIT_MS,
      0,
      MAX_DATABASE_START_WAIT_MS,
    ),
    shutdownDrainMs: parseInteger(
      env.SHUTDOWN_DRAIN_MS,
      'SHUTDOWN_DRAIN_MS',
      DEFAULT_SHUTDOWN_DRAIN_MS,
      0,
      MAX_SHUTDOWN_DRAIN_MS,
    ),
    idempotencyRecordsPerKey: parseInteger(
      env.IDEMPOTENCY_RECORDS_PER_KEY,
      'IDEMPOTENCY_RECORDS_PER_KEY',
      DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY,
      1,
      MAX_IDEMPOTENCY_RECORDS_PER_KEY,
    ),
    corsOrigins: Object.freeze(parseCorsOrigins(env.CORS_ORIGINS)),
    tracing: parseTracing(env),
  })
}

// Tracing is on when an endpoint is set, as the OpenTelemetry specification has it; the SDK reads
// the endpoint itself; here it is only checked to be an http(s) URL, so a typo stops start-up.
function parseTracing(env: NodeJS.ProcessEnv): TracingConfig | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT
  if (!endpoint || parseBoolean(env.OTEL_SDK_DISABLED, 'OTEL_SDK_DISABLED', false)) return undefined
  let url: URL | undefined
  try {
    url = new URL(endpoint)
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol)) {
    const variable = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'
    throw new ConfigError(variable, 'must be an absolute http(s) URL, such as http://otel-collector:4318.')
  }
  const protocol = env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf'
  const known = OTLP_PROTOCOLS.find((candidate) => candidate === protocol)
  if (!known) throw new ConfigError('OTEL_EXPORTER_OTLP_PROTOCOL', `must be ${OTLP_PROTOCOLS.join(' or ')}.`)
  return Object.freeze({ protocol: known })
}

/** A database URL for `copy` and where it came from (a flag or a variable), to name it in errors. */
export interface NamedDatabaseUrl {
  readonly url: string
  /** `--from`, `COPY_FROM_URL`, `DATABASE_URL`, `--to` or `COPY_TO_URL`. */
  readonly name: string
}

/**
 * The two databases of `copy`: each flag when given, else the environment, so no password needs to
 * be on the command line (where `ps` shows it to every local user). The source falls back to
 * COPY_FROM_URL, then DATABASE_URL, then DEFAULT_DATABASE_URL; the target to COPY_TO_URL.
 * Throws ConfigError naming COPY_TO_URL when no target is given either way.
 */
export function loadCopyUrls(
  flags: { from?: string | undefined; to?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
): { from: NamedDatabaseUrl; to: NamedDatabaseUrl } {
  // Each source is read only if the ones before it are unset: an unreadable DATABASE_URL_FILE does
  // not matter when --from is given.
  const from = firstSet([
    ['--from', () => flags.from],
    ['COPY_FROM_URL', () => secretVariable(env, 'COPY_FROM_URL')],
    ['DATABASE_URL', () => secretVariable(env, 'DATABASE_URL')],
    ['DATABASE_URL', () => DEFAULT_DATABASE_URL],
  ])
  const to = firstSet([
    ['--to', () => flags.to],
    ['COPY_TO_URL', () => secretVariable(env, 'COPY_TO_URL')],
  ])
  if (!from || !to) throw new ConfigError('COPY_TO_URL', 'is not set and no --to was given: name the database to copy into.')
  return { from, to }
}

/**
 * The value of a variable that may hold a secret: `name` itself, or the content of the file named by
 * `name`_FILE (Docker and Kubernetes secrets are mounted as files), without its trailing line break.
 * Undefined when neither is set. Throws ConfigError when both are set (naming both), or when the
 * file cannot be read or is empty (naming the file, never echoing its content).
 */
function secretVariable(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const fileVariable = `${name}_FILE`
  const path = env[fileVariable]
  if (path === undefined || path === '') return env[name]
  if (env[name] !== undefined && env[name] !== '') throw new ConfigError(name, `and ${fileVariable} are both set: set only one.`)
  let content: string
  try {
    content = readFileSync(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error'
    throw new ConfigError(fileVariable, `names a file that cannot be read (${code}): ${path}`)
  }
  const value = content.replace(/(\r?\n)+$/, '')
  if (value === '') throw new ConfigError(fileVariable, `names an empty file: ${path}`)
  return value
}

function firstSet(candidates: Array<[string, () => string | undefined]>): NamedDatabaseUrl | undefined {
  for (const [name, read] of candidates) {
    const url = read()
    if (url !== undefined && url !== '') return { name, url }
  }
  return undefined
}

function parseBoolean(value: string | undefined, variable: string, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  if (/^(true|1|yes|on)$/i.test(value)) return true
  if (/^(false|0|no|off)$/i.test(value)) return false
  throw new ConfigError(variable, 'must be true or false.')
}

function parsePort(value: string | undefined): number {
  return parseInteger(value, 'PORT', DEFAULT_PORT, 0, 65535)
}

function parseInteger(value: string | undefined, variable: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback
  const number = Number(value)
  if (!/^\d+$/.test(value) || number < min || number > max) {
    throw new ConfigError(variable, `must be an integer from ${min} to ${max}.`)
  }
  return number
}

function parseHost(value: string | undefined, variable: string): string {
  if (value === undefined || value === '') return DEFAULT_HOST
  if (/\s/.test(value)) throw new ConfigError(variable, 'must be a host name or IP address, without spaces.')
  return value
}

/**
 * Parses a database URL (`sqlite:PATH`, `sqlite::memory:`, `postgres://…`, `postgresql://…`);
 * `pool` applies to PostgreSQL. Throws ConfigError naming `variable`; never echoes the URL (it may
 * hold a password).
 */
export function parseDatabaseUrl(
  value: string,
  cwd: string,
  pool: PoolSettings = { poolMax: DEFAULT_POOL_MAX, statementTimeoutMs: DEFAULT_STATEMENT_TIMEOUT_MS },
  variable = 'DATABASE_URL',
): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length)
    if (path === '') throw new ConfigError(variable, 'must name a file: sqlite:PATH or sqlite::memory:.')
    if (path === ':memory:') return { dialect: 'sqlite', path }
    return { dialect: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) }
  }
  if (/^postgres(ql)?:\/\//.test(value)) {
    try {
      new URL(value)
    } catch {
      throw new ConfigError(variable, 'is not a valid postgres:// URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE.')
    }
    return { dialect: 'postgres', url: value, ...pool }
  }
  throw new ConfigError(
    variable,
    'must be sqlite:PATH (relative or absolute), sqlite::memory:, or postgres://USER:PASSWORD@HOST:PORT/DATABASE.',
  )
}

function parseApiKeys(value: string | undefined): string[] {
  const keys = (value ?? '')
    .split(',')
    .map((key) => key.trim())
    .filter((key) => key !== '')
  keys.forEach((key, index) => {
    // RFC 6750 b64token, so a client can send it; long and varied enough not to be guessed
    // (key-strength.ts). The message never repeats the key.
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(key) || !isStrongEnough(key)) {
      throw new ConfigError(
        'API_KEYS',
        `entry ${index + 1} is not usable: each key must be at least ${MIN_CONFIGURED_KEY_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (then optional =), random (an estimated ${MIN_CONFIGURED_KEY_BITS}+ bits: no repeated, alternating or sequential patterns), separated by commas. Generate one with: openssl rand -base64 32`,
      )
    }
  })
  return keys
}

function parseLogLevel(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return DEFAULT_LOG_LEVEL
  const level = LOG_LEVELS.find((candidate) => candidate === value.toLowerCase())
  if (!level) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}.`)
  return level
}

// The URL goes verbatim into `Location`, `Link` and the OpenAPI `servers`, so it must already be
// in the WHATWG parser's normal form: the parser silently drops CR, LF and TAB and percent-encodes
// `"<>` and spaces, so a value it would change (or one with credentials, published in the document)
// is refused rather than used raw.
function parsePublicUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  const trimmed = value.replace(/\/+$/, '')
  let url: URL | undefined
  try {
    url = new URL(trimmed)
  } catch {}
  if (
    !url ||
    !/^https?:$/.test(url.protocol) ||
    url.hostname === '' ||
    url.username !== '' ||
    url.password !== '' ||
    url.href.replace(/\/$/, '') !== trimmed ||
    !trimmed.endsWith('/v1') ||
    url.search ||
    url.hash
  ) {
    throw new ConfigError(
      'PUBLIC_URL',
      'must be an absolute http(s) URL ending in /v1, such as https://api.example.com/v1, in normal form: no user or password, no spaces, control characters, quotes or angle brackets, host in lower case.',
    )
  }
  return trimmed
}

// The forms Fastify's `trustProxy` (proxy-addr) accepts, checked here so that a typo stops start-up
// naming the variable instead of failing inside the framework: an IPv4 or IPv6 address, one with a
// `/prefix` in range, or one of proxy-addr's named ranges.
const NAMED_PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal'])
function parseTrustProxy(value: string | undefined): string[] {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  entries.forEach((entry, index) => {
    if (NAMED_PROXY_RANGES.has(entry)) return
    const [address = '', prefix, extra] = entry.split('/')
    const version = isIP(address)
    const bits = version === 4 ? 32 : 128
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)
    if (version === 0 || !prefixOk || extra !== undefined) {
      throw new ConfigError(
        'TRUST_PROXY',
        `entry ${index + 1} is not an address or CIDR range: each must be an IP address, ADDRESS/PREFIX (such as 10.0.0.0/8), loopback, linklocal or uniquelocal, separated by commas.`,
      )
    }
  })
  return entries
}

// Exact origins as a browser sends them in `Origin` (RFC 6454 §6.1): scheme, host and an optional
// port; no path, query, fragment or credentials, no trailing slash.
function parseCorsOrigins(value: string | undefined): string[] {
  const origins = (value ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '')
  origins.forEach((origin, index) => {
    let url: URL | undefined
    try {
      url = new URL(origin)
    } catch {}
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
      throw new ConfigError(
        'CORS_ORIGINS',
        `entry ${index + 1} is not an origin: each must be http(s)://HOST[:PORT] with no path or trailing slash, such as https://app.example.com, separated by commas.`,
      )
    }
  })
  return origins
}
