// Configuration: the only reader of the environment. Every variable is validated once at start-up,
// defaulted as the README's configuration table says, and frozen; a bad value names the variable.
import { availableParallelism } from 'node:os'
import { isAbsolute, resolve } from 'node:path'
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
  /** Whether GET /metrics (Prometheus) is served. */
  readonly metricsEnabled: boolean
  /** Requests per API key per minute, per process; 0 turns rate limiting off. */
  readonly rateLimitPerMinute: number
  /** CORS_ORIGINS: browser origins (`https://app.example.com`) allowed to call the API; empty = CORS off. */
  readonly corsOrigins: readonly string[]
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
    poolMax: parseInteger(env.DATABASE_POOL_MAX, 'DATABASE_POOL_MAX', DEFAULT_POOL_MAX, 1, 1000),
    statementTimeoutMs: parseInteger(env.DATABASE_STATEMENT_TIMEOUT_MS, 'DATABASE_STATEMENT_TIMEOUT_MS', 5000, 1, 600_000),
  }
  const database = parseDatabaseUrl(env.DATABASE_URL ?? DEFAULT_DATABASE_URL, cwd, pool)
  const workers = env.WORKERS === 'auto' ? availableParallelism() : parseInteger(env.WORKERS, 'WORKERS', 1, 1, 64)
  if (workers > 1 && database.dialect === 'sqlite' && database.path === ':memory:') {
    throw new ConfigError('WORKERS', 'must be 1 with DATABASE_URL=sqlite::memory: (each process would have its own empty store).')
  }
  return Object.freeze({
    port: parsePort(env.PORT),
    host: parseHost(env.HOST),
    database: Object.freeze(database),
    apiKeys: Object.freeze(parseApiKeys(env.API_KEYS)),
    logLevel: parseLogLevel(env.LOG_LEVEL),
    publicUrl: parsePublicUrl(env.PUBLIC_URL),
    workers,
    metricsEnabled: parseBoolean(env.METRICS_ENABLED, 'METRICS_ENABLED', true),
    rateLimitPerMinute: parseInteger(
      env.RATE_LIMIT_PER_MINUTE,
      'RATE_LIMIT_PER_MINUTE',
      DEFAULT_RATE_LIMIT_PER_MINUTE,
      0,
      10_000_000,
    ),
    corsOrigins: Object.freeze(parseCorsOrigins(env.CORS_ORIGINS)),
  })
}

function parseBoolean(value: string | undefined, variable: string, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback
  if (/^(true|1|yes|on)$/i.test(value)) return true
  if (/^(false|0|no|off)$/i.test(value)) return false
  throw new ConfigError(variable, 'must be true or false.')
}

function parsePort(value: string | undefined): number {
  return parseInteger(value, 'PORT', 8080, 0, 65535)
}

function parseInteger(value: string | undefined, variable: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback
  const number = Number(value)
  if (!/^\d+$/.test(value) || number < min || number > max) {
    throw new ConfigError(variable, `must be an integer from ${min} to ${max}.`)
  }
  return number
}

function parseHost(value: string | undefined): string {
  if (value === undefined || value === '') return '127.0.0.1'
  if (/\s/.test(value)) throw new ConfigError('HOST', 'must be a host name or IP address, without spaces.')
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
  pool: PoolSettings = { poolMax: DEFAULT_POOL_MAX, statementTimeoutMs: 5000 },
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
    // RFC 6750 b64token, so a client can send it; 16+ characters so it is not guessable.
    if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(key) || key.length < 16) {
      throw new ConfigError(
        'API_KEYS',
        `entry ${index + 1} is not usable: each key must be at least 16 characters of A-Z a-z 0-9 - . _ ~ + / (then optional =), separated by commas.`,
      )
    }
  })
  return keys
}

function parseLogLevel(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info'
  const level = LOG_LEVELS.find((candidate) => candidate === value.toLowerCase())
  if (!level) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}.`)
  return level
}

function parsePublicUrl(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined
  const trimmed = value.replace(/\/+$/, '')
  let url: URL | undefined
  try {
    url = new URL(trimmed)
  } catch {}
  if (!url || !/^https?:$/.test(url.protocol) || !trimmed.endsWith('/v1') || url.search || url.hash) {
    throw new ConfigError('PUBLIC_URL', 'must be an absolute http(s) URL ending in /v1, such as https://api.example.com/v1.')
  }
  return trimmed
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
