// Configuration: the only reader of the environment. Every variable is declared once, in VARIABLES:
// a TypeBox schema whose type, bounds, default and description give its parsing, its error message,
// its README row and its `--help` line (src/config-variables.ts). Validated once at start-up,
// defaulted, and frozen; a bad value names the variable.
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { Type } from '@sinclair/typebox'
import {
  ConfigError,
  type ConfigurationVariable,
  custom,
  documentation,
  isHttpUrl,
  parseApiKeys,
  parseCorsOrigins,
  parseDatabaseUrl,
  parsePublicUrl,
  parseRateLimitStoreUrl,
  parseReplicaUrls,
  parseTrustProxy,
  type Settings,
  settings,
  text,
  URL_MAX_LENGTH,
  type Value,
  type VariableKeywords,
  variableValue,
} from './config-variables.js'
import { type ConfiguredKey, MAX_RATE_LIMIT_PER_MINUTE } from './key-grants.js'
import { MIN_CONFIGURED_KEY_BITS, MIN_CONFIGURED_KEY_LENGTH } from './key-strength.js'
import type { DatabaseConfig } from './store/index.js'

export { ConfigError, parseDatabaseUrl } from './config-variables.js'

/** pino levels accepted by LOG_LEVEL. */
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/** OTLP/HTTP encodings the trace exporter speaks (OTEL_EXPORTER_OTLP_PROTOCOL); gRPC is not shipped. */
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const

// HOST and METRICS_HOST: any name or address the resolver takes, so only spaces are refused here.
const hostName = (description: string) =>
  Type.String({
    pattern: '^\\S+$',
    // Loopback, so nothing is exposed until HOST says so.
    default: '127.0.0.1',
    description,
    'x-message': 'must be a host name or IP address, without spaces.',
  })

/** The most replicas DATABASE_REPLICA_URLS may list: each is health-checked by every process. */
export const MAX_REPLICAS = 16

// The most processes WORKERS starts, `auto` included: PostgreSQL connections grow with it (DATABASE_POOL_MAX each).
const MAX_WORKERS = 64

/** Every variable loadConfig and loadCopyUrls read, in the order the README lists them. */
export const VARIABLES = {
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080, description: 'TCP port, {range} (0 picks a free one).' }),
  HOST: hostName('Address to listen on; `0.0.0.0` for all interfaces (behind a balancer or in a container).'),
  DATABASE_URL: custom(
    Type.String({
      default: 'sqlite:data/animal-store.db',
      'x-file': true,
      description:
        "The database: `sqlite:PATH`, `sqlite::memory:` (a throwaway store) or `postgres://USER:PASSWORD@HOST:PORT/DATABASE`. An SQLite path is relative to the working directory, or absolute; a missing folder is created 0700 and the file 0600, readable by the service's user alone. An existing file is used only when it is the service's own: a symbolic link at the path (or at its `-wal`, `-shm`, `-journal`), a file of another user, one open to other users (any group or other permission: `chmod 600` it) or a folder every user may write is refused, naming it; what the service made in an earlier run is its own. `postgresql://` works too; connection parameters such as `sslmode` go in the query string, as node-postgres reads them. Never echoed in errors.",
    }),
  ),
  // Small on purpose: instances × WORKERS × this must stay under the server's max_connections (100
  // by default); node-postgres advises few per process.
  DATABASE_POOL_MAX: custom(
    Type.Integer({
      minimum: 1,
      maximum: 1000,
      default: 5,
      description:
        "PostgreSQL connections per process, {range}. Instances × workers × this must stay below the server's `max_connections`.",
    }),
  ),
  DATABASE_STATEMENT_TIMEOUT_MS: custom(
    Type.Integer({
      minimum: 1,
      maximum: 600_000,
      default: 5000,
      description:
        'PostgreSQL: longest a statement (and a wait for a connection) may take, in ms, {range}; past it the request gets 503.',
    }),
  ),
  DATABASE_REPLICA_URLS: text(
    `PostgreSQL only: comma-separated \`postgres://\` URLs of streaming replicas of \`DATABASE_URL\` (at most ${MAX_REPLICAS}), each best reached through a PgBouncer of its own. listPets and getPet are read from the replicas in turn while each is in recovery and at most \`REPLICA_MAX_LAG_MS\` behind; everything else (creates, Idempotency-Key records, API keys, migrations, readiness) uses \`DATABASE_URL\`. A create's answer then carries a consistency token that a later read sends back to be sure to see it (docs/deploying.md, "Read replicas"). Turn it on only once every instance runs a release that knows it. An error with SQLite. Never echoed in errors.`,
    { 'x-file': true },
  ),
  // Longer than a replica on the same network takes to replay a create (well under 10 ms), short
  // enough that a read with a token the replicas have not reached yet is answered promptly by the primary.
  REPLICA_WAIT_MS: Type.Integer({
    minimum: 0,
    maximum: 10_000,
    default: 100,
    description:
      'With `DATABASE_REPLICA_URLS`: how long (ms, {range}) a read whose `Consistency-Token` (or cursor) no replica has replayed yet waits for one to get there before it is read from the primary instead. `0`: at once.',
  }),
  // Several health checks' worth (REPLICA_CHECK_INTERVAL_MS, 250 ms), so a current replica is never
  // taken out between two of them; small enough that a read without a token is about as fresh as one
  // from the primary.
  REPLICA_MAX_LAG_MS: Type.Integer({
    minimum: 1000,
    maximum: 3_600_000,
    default: 2000,
    description:
      'With `DATABASE_REPLICA_URLS`: how far behind the primary (ms, {range}) a replica may be and still serve reads: a read without a token is never older than this. A replica further behind, down, or promoted gets no reads until it is back within it.',
  }),
  API_KEYS: text(
    `Comma-separated keys accepted in addition to stored ones, for platforms that inject secrets. Each at least ${MIN_CONFIGURED_KEY_LENGTH} characters of \`A-Z a-z 0-9 - . _ ~ + /\` (then optional \`=\`) and random: an estimated ${MIN_CONFIGURED_KEY_BITS} bits or more, so repeated, alternating and sequential values are refused (\`src/key-strength.ts\`; \`openssl rand -base64 32\` makes a good one). Never logged or stored. A key may be followed by \`:scope=read\` (a read-only key: listPets and getPet; give these to browser pages) or \`:scope=write\` (the default: may also create) and by \`:rate-limit=N\`, its own requests per minute (0–${MAX_RATE_LIMIT_PER_MINUTE}, 0 = no limit; unset: \`RATE_LIMIT_PER_MINUTE\`), as in \`KEY:scope=read:rate-limit=600\`; a colon is never part of a key. Each key once: a key listed twice is refused, naming both entries. When set, no first key is created or printed.`,
    { 'x-file': true },
  ),
  LOG_LEVEL: Type.Union(
    LOG_LEVELS.map((level) => Type.Literal(level)),
    { default: 'info', description: 'Log level: {values}.' },
  ),
  WORKERS: custom(
    Type.Integer({
      minimum: 1,
      maximum: MAX_WORKERS,
      default: 1,
      'x-message': `must be an integer from 1 to ${MAX_WORKERS}, or auto (one per CPU).`,
      description:
        'Processes sharing the port on this machine (node:cluster), {range}, or `auto` for one per CPU within that range. Above 1, each listens on a socket of its own (SO_REUSEPORT) on Linux and FreeBSD under Node.js 22.12+, elsewhere on the one node:cluster shares. On SQLite, writes still go one at a time (WAL); reads scale.',
    }),
  ),
  // 1,000/s on average: far above any one well-behaved client, low enough that one runaway key
  // cannot take a whole process. Load tests with one key should raise it or set 0.
  RATE_LIMIT_PER_MINUTE: Type.Integer({
    minimum: 0,
    maximum: MAX_RATE_LIMIT_PER_MINUTE,
    default: 60_000,
    description:
      'Requests per API key per minute, {range} (0 = off), for every key without a limit of its own (`keys create --rate-limit`, `API_KEYS`): per process, or for the whole fleet with `RATE_LIMIT_STORE_URL`. See "Rate limits" below.',
  }),
  RATE_LIMIT_STORE_URL: text(
    'A Redis-protocol server (Redis 7, Valkey) shared by every instance and worker, `redis://[:PASSWORD@]HOST:PORT[/DB]`, or `rediss://` for TLS (use it across a network: a `redis://` URL to a host that is not loopback is warned about at start): makes `RATE_LIMIT_PER_MINUTE` one budget per API key for the fleet, leased to each process in small batches (`AUTH_FAILURES_PER_MINUTE` stays per process). Unset: each process counts on its own. While it is unreachable, slow (250 ms) or answers anything but a lease within bounds, requests are counted per process, one warning is logged and `animal_store_rate_limit_store_fallbacks_total` grows; the service reconnects by itself. Never echoed in errors.',
    { 'x-file': true },
  ),
  // A create with an Idempotency-Key every 8.6 s around the clock: bounds one key's records to about
  // 3–23 MB (docs/security.md), and the count each new record costs to about 1 ms.
  IDEMPOTENCY_RECORDS_PER_KEY: Type.Integer({
    minimum: 1,
    maximum: 10_000_000,
    default: 10_000,
    description:
      "Idempotency-Key records one API key may hold, {range}, counted in the database (so across instances and workers). Each is kept 24 h and takes 0.3–2.3 KB. A create with a new Idempotency-Key past it is never refused: the API key's oldest record is deleted to make room (counted in `animal_store_idempotency_records_evicted_total`), so a retry then protects a create only while fewer than this many newer ones came from the same API key; expired records are deleted in the background every minute. The default keeps every record its full 24 h for one such create every 8.6 s on average per API key; raise it for busier keys.",
  }),
  // The budget a key gets: far above a client being set up or rotating its key (and test suites
  // sending thousands of bad requests), low enough that one address cannot keep a process hashing.
  AUTH_FAILURES_PER_MINUTE: Type.Integer({
    minimum: 0,
    maximum: 10_000_000,
    default: 60_000,
    description:
      "Requests without a valid API key accepted per client address per minute, per process (also with `RATE_LIMIT_STORE_URL`), {range} (0 = no limit); each 401 carries the address's `RateLimit` fields (policy `auth`); past it they get 429 `rate_limited` instead of 401, and the connection is closed. Requests with a valid key are never counted.",
  }),
  // Above any balancer's pool, below what the default file-descriptor limit and memory allow.
  MAX_CONNECTIONS: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 10_000,
    description:
      'Open client connections per process, {range}. A new connection past it closes one that serves no one, so no kind of socket can lock clients out: one closing lingering, else one whose response its client has stopped reading, else the one open longest without a request, else the one idle longest between requests; only when every connection has a request in progress that is moving is the new one closed at once.',
  }),
  // Longer than a PostgreSQL restart or failover, so an orchestrator's restart loop (whose back-off
  // grows) never has to outlast the outage.
  DATABASE_START_WAIT_MS: Type.Integer({
    minimum: 0,
    maximum: 3_600_000,
    default: 120_000,
    description:
      'PostgreSQL: how long (ms, {range}) a start waits for a database it cannot reach, trying again every 0.25–2 s (each failure logged), while the port answers `/healthz` 200 and everything else 503; then it exits 1. `0` exits at once. On SQLite a start never waits.',
  }),
  // None for a process run by hand; capped so that a typo cannot hold a shutdown for long.
  SHUTDOWN_DRAIN_MS: Type.Integer({
    minimum: 0,
    maximum: 120_000,
    default: 0,
    description:
      'On SIGTERM, how long (ms, {range}) to keep serving with `/readyz` answering 503 before closing, so balancers stop sending first; then connections are closed gracefully (see docs/deploying.md). The container image sets `5000`. SIGINT (Ctrl-C) does not wait.',
  }),
  METRICS_ENABLED: Type.Boolean({
    default: true,
    description:
      'Serve Prometheus metrics at `GET /metrics`, on a listener of their own (no key needed there), never on `PORT`. Accepts `true/false`, `1/0`, `yes/no`, `on/off`.',
  }),
  METRICS_HOST: hostName(
    'Address of the metrics listener (the container image sets `0.0.0.0`, for a scraper on the container network).',
  ),
  // The port commonly used by Prometheus exporters (OpenTelemetry's default), apart from PORT so that
  // a balancer in front of PORT never exposes the metrics.
  METRICS_PORT: Type.Integer({
    minimum: 0,
    maximum: 65535,
    default: 9464,
    description:
      'Port of the metrics listener, {range} (0 picks a free one); must differ from `PORT`. When set and taken, start-up fails; when left at the default and taken (a second instance on the host), the service runs without metrics and logs a warning.',
  }),
  PUBLIC_URL: text(
    `The externally visible base URL, ending in \`/v1\`, such as \`https://api.example.com/v1\`, at most ${URL_MAX_LENGTH} characters: http or https, a host, no user or password, and written as browsers normalise it (no spaces, control characters, \`"\`, \`<\` or \`>\`; host in lower case). Written into the OpenAPI \`servers\` list (without it: \`http://HOST:PORT/v1\`, then the relative \`/v1\`) and used for \`Location\` and \`Link\` URLs; without it those are relative (\`/v1/pets/1\`). Production and staging are two deployments that differ only in this and their database.`,
  ),
  TRUST_PROXY: text(
    "Comma-separated addresses or CIDR ranges of the balancers in front of the service, e.g. `10.0.0.5,172.16.0.0/12` (also `loopback`, `linklocal`, `uniquelocal`). A request from one of them is taken to come from the address its `X-Forwarded-For` names (the right-most one not itself trusted): that address is the log line's `client` and what `AUTH_FAILURES_PER_MINUTE` counts. Unset: `X-Forwarded-For` is ignored and the client is the connection's peer, so behind a balancer every client shares its address. Never list addresses the public can connect from: a trusted `X-Forwarded-For` can name any address.",
  ),
  CORS_ORIGINS: text(
    `Comma-separated browser origins allowed to call the API (CORS), each exactly as a browser sends it: \`https://HOST[:PORT]\` or \`http://…\`, no path, at most ${URL_MAX_LENGTH} characters, e.g. \`https://app.example.com,http://localhost:5173\`. Unset: CORS is off and no \`Access-Control-*\` header is sent. Preflights (\`OPTIONS\` with \`Origin\` and \`Access-Control-Request-Method\`) are answered without a key; pages may send \`Authorization\`, \`Content-Type\`, \`Idempotency-Key\`, \`If-None-Match\`, \`Consistency-Token\` and \`X-Request-Id\` and read \`Consistency-Token\`, \`ETag\`, \`Idempotent-Replayed\`, \`Link\`, \`Location\`, \`RateLimit\`, \`RateLimit-Policy\`, \`Retry-After\`, \`Deprecation\`, \`Sunset\`, \`WWW-Authenticate\` and \`X-Request-Id\`.`,
  ),
  COPY_FROM_URL: text('`copy` only: the database to copy from when `--from` is not given (any form `DATABASE_URL` takes).', {
    'x-file': true,
    'x-default': '`DATABASE_URL`',
  }),
  COPY_TO_URL: text(
    '`copy` only: the database to copy into when `--to` is not given. Pass PostgreSQL URLs here, not in flags (`ps` shows flags to every local user).',
    { 'x-file': true },
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: text(
    'Turns on OpenTelemetry tracing: the base URL of an OTLP/HTTP collector, such as `http://otel-collector:4318` (spans go to its `/v1/traces`). Unset (and no `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): no tracing code is loaded. The SDK reads the other standard `OTEL_*` variables itself; see docs/deploying.md, "Tracing".',
  ),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: text(
    'The full URL spans are sent to (`…/v1/traces`), instead of `OTEL_EXPORTER_OTLP_ENDPOINT`; setting it also turns tracing on.',
  ),
  // Checked by parseTracing, and only when tracing is on: the variable may be set for other services.
  OTEL_EXPORTER_OTLP_PROTOCOL: text(
    `How spans are encoded: ${OTLP_PROTOCOLS.map((protocol) => `\`${protocol}\``).join(' or ')} (gRPC is not supported).`,
    { 'x-default': OTLP_PROTOCOLS[0] },
  ),
  OTEL_SDK_DISABLED: custom(
    Type.Boolean({ default: false, description: '`true` keeps tracing off even when an endpoint is set.' }),
  ),
}

type Name = keyof typeof VARIABLES

/** The README's table and `--help` (scripts/config-doc.ts, src/cli.ts): one row per VARIABLES entry. */
export const CONFIGURATION_VARIABLES: readonly ConfigurationVariable[] = documentation(VARIABLES)

/** Defaults other modules and tests start from (the values of VARIABLES' `default`). */
export const DEFAULT_PORT: number = VARIABLES.PORT.default
export const DEFAULT_HOST: string = VARIABLES.HOST.default
export const DEFAULT_METRICS_PORT: number = VARIABLES.METRICS_PORT.default
export const DEFAULT_STATEMENT_TIMEOUT_MS: number = VARIABLES.DATABASE_STATEMENT_TIMEOUT_MS.default
export const DEFAULT_RATE_LIMIT_PER_MINUTE: number = VARIABLES.RATE_LIMIT_PER_MINUTE.default
export const DEFAULT_AUTH_FAILURES_PER_MINUTE: number = VARIABLES.AUTH_FAILURES_PER_MINUTE.default
export const DEFAULT_MAX_CONNECTIONS: number = VARIABLES.MAX_CONNECTIONS.default
export const DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY: number = VARIABLES.IDEMPOTENCY_RECORDS_PER_KEY.default

/** The validated configuration (README "Configuration"): the plain VARIABLES, and these. */
export interface Config extends Settings<typeof VARIABLES> {
  readonly database: DatabaseConfig
  /** API_KEYS: keys accepted besides the stored ones, with their scope and rate limit; never logged. */
  readonly apiKeys: readonly ConfiguredKey[]
  /** Externally visible base URL ending in `/v1`, without a trailing slash; undefined when unset. */
  readonly publicUrl: string | undefined
  /** Worker processes sharing the port (WORKERS; `auto` = available CPUs). 1 = no cluster. */
  readonly workers: number
  /** Whether METRICS_PORT was set (a taken port then fails start-up) rather than defaulted. */
  readonly metricsPortChosen: boolean
  /** TRUST_PROXY: addresses, CIDR ranges or proxy-addr's named ranges; empty = the socket's peer is the client. */
  readonly trustProxy: readonly string[]
  /** DATABASE_REPLICA_URLS: the streaming replicas listPets and getPet may read from; empty = none. Never logged. */
  readonly databaseReplicaUrls: readonly string[]
  /** RATE_LIMIT_STORE_URL: the shared store of the rate limits; undefined = each process counts alone. Never logged. */
  readonly rateLimitStoreUrl: string | undefined
  /** CORS_ORIGINS: browser origins allowed to call the API; empty = CORS off. */
  readonly corsOrigins: readonly string[]
  /** OpenTelemetry tracing (src/tracing.ts): on when an OTLP endpoint is set; undefined = off, nothing loaded. */
  readonly tracing: TracingConfig | undefined
}

/** How spans are exported; the OpenTelemetry SDK reads the endpoint and its other settings itself. */
interface TracingConfig {
  readonly protocol: (typeof OTLP_PROTOCOLS)[number]
}

/** Variable `name` from `env` (or its NAME_FILE), as its schema reads it. Throws ConfigError naming it. */
function read<N extends Name>(env: NodeJS.ProcessEnv, name: N): Value<(typeof VARIABLES)[N]> {
  const schema: (typeof VARIABLES)[N] & VariableKeywords = VARIABLES[name]
  return variableValue(name, schema, schema['x-file'] ? secretVariable(env, name) : env[name])
}

/**
 * Reads and validates the configuration from `env` (relative SQLite paths resolve against `cwd`).
 * Throws ConfigError for the first bad variable.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): Config {
  const plain = settings(VARIABLES, (name) => read(env, name))
  const pool = { poolMax: read(env, 'DATABASE_POOL_MAX'), statementTimeoutMs: read(env, 'DATABASE_STATEMENT_TIMEOUT_MS') }
  const database = parseDatabaseUrl(read(env, 'DATABASE_URL'), cwd, pool, 'DATABASE_URL')
  const workers = env.WORKERS === 'auto' ? Math.min(availableParallelism(), MAX_WORKERS) : read(env, 'WORKERS')
  if (workers > 1 && database.dialect === 'sqlite' && database.path === ':memory:') {
    throw new ConfigError('WORKERS', 'must be 1 with DATABASE_URL=sqlite::memory: (each process would have its own empty store).')
  }
  if (plain.metricsPort !== 0 && plain.metricsPort === plain.port) {
    throw new ConfigError('METRICS_PORT', 'must differ from PORT: the metrics have their own listener, off the public port.')
  }
  return Object.freeze({
    ...plain,
    database: Object.freeze(database),
    apiKeys: parseApiKeys(read(env, 'API_KEYS'), 'API_KEYS'),
    publicUrl: parsePublicUrl(read(env, 'PUBLIC_URL'), 'PUBLIC_URL'),
    workers,
    metricsPortChosen: env.METRICS_PORT !== undefined && env.METRICS_PORT !== '',
    databaseReplicaUrls: parseReplicaUrls(read(env, 'DATABASE_REPLICA_URLS'), database, MAX_REPLICAS, 'DATABASE_REPLICA_URLS'),
    trustProxy: parseTrustProxy(read(env, 'TRUST_PROXY'), 'TRUST_PROXY'),
    corsOrigins: parseCorsOrigins(read(env, 'CORS_ORIGINS'), 'CORS_ORIGINS'),
    rateLimitStoreUrl: parseRateLimitStoreUrl(read(env, 'RATE_LIMIT_STORE_URL'), 'RATE_LIMIT_STORE_URL'),
    tracing: parseTracing(env),
  })
}

// Tracing is on when an endpoint is set, as the OpenTelemetry specification has it; the SDK reads
// the endpoint itself; here it is only checked to be an http(s) URL, so a typo stops start-up.
function parseTracing(env: NodeJS.ProcessEnv): TracingConfig | undefined {
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'
  const endpoint = read(env, variable)
  if (!endpoint || read(env, 'OTEL_SDK_DISABLED')) return undefined
  if (!isHttpUrl(endpoint))
    throw new ConfigError(variable, 'must be an absolute http(s) URL, such as http://otel-collector:4318.')
  const protocol = read(env, 'OTEL_EXPORTER_OTLP_PROTOCOL') || OTLP_PROTOCOLS[0]
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
 * COPY_FROM_URL, then DATABASE_URL (or its default); the target to COPY_TO_URL.
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
    ['COPY_FROM_URL', () => read(env, 'COPY_FROM_URL')],
    ['DATABASE_URL', () => read(env, 'DATABASE_URL')],
  ])
  const to = firstSet([
    ['--to', () => flags.to],
    ['COPY_TO_URL', () => read(env, 'COPY_TO_URL')],
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
  for (const [name, readUrl] of candidates) {
    const url = readUrl()
    if (url !== undefined && url !== '') return { name, url }
  }
  return undefined
}
