// How an environment variable's text becomes its value, or a ConfigError naming it, and how it is
// documented. src/config.ts declares each variable as a TypeBox schema, from which its value, its
// error message, its README row and its `--help` line all follow; text a schema cannot check (URLs,
// lists, keys) is parsed by the functions at the end. Reads no environment: src/config.ts hands it
// the text.
import { isIP } from 'node:net'
import { isAbsolute, resolve } from 'node:path'
import { type OptionalKind, type Static, type TSchema, Type } from '@sinclair/typebox'
import { Ajv, type ValidateFunction } from 'ajv'
import { type ConfiguredKey, DEFAULT_KEY_SCOPE, isKeyScope, KEY_SCOPES, parseRateLimit, RATE_LIMIT_RULE } from './key-grants.js'
import { isStrongEnough, MIN_CONFIGURED_KEY_BITS, MIN_CONFIGURED_KEY_LENGTH } from './key-strength.js'
import type { DatabaseConfig } from './store/index.js'

/** A configuration value that cannot be used; `variable` names it. The message never echoes secrets. */
export class ConfigError extends Error {
  readonly variable: string
  constructor(variable: string, message: string) {
    super(`${variable} ${message}`)
    this.name = 'ConfigError'
    this.variable = variable
  }
}

/**
 * JSON Schema keywords of these declarations, besides `default`, bounds and `description` (Markdown,
 * where `{range}` stands for an integer's `minimum–maximum` and `{values}` for the accepted words).
 */
export interface VariableKeywords {
  /** NAME_FILE may give the value instead (a secret mounted as a file). */
  'x-file'?: boolean
  /** The default as documented when it is no value (COPY_FROM_URL's is whatever DATABASE_URL is). */
  'x-default'?: string
  /** The error after the variable's name, where the schema alone cannot say what is accepted. */
  'x-message'?: string
}

/** One environment variable as operators see it (the README's table and `--help`). */
export interface ConfigurationVariable {
  readonly name: string
  /** The default as shown, or `(none)`. */
  readonly default: string
  /** What it does and accepts (Markdown; its first sentence is the `--help` line). */
  readonly meaning: string
  /** Whether NAME_FILE may give the value instead. */
  readonly file: boolean
}

const CUSTOM: unique symbol = Symbol('custom')
type Custom = { readonly [CUSTOM]: true }

/**
 * Marks a variable that code turns into Config itself (a URL, a list, part of another field); every
 * other one is the Config field of its camelCase name, as its schema alone reads it (see `settings`).
 */
export const custom = <T extends TSchema>(schema: T): T & Custom => Object.assign(schema, { [CUSTOM]: true as const })

/** A custom variable taken as text, for code to parse: no default unless `keywords` give one. */
export const text = (description: string, keywords: VariableKeywords = {}) =>
  custom(Type.Optional(Type.String({ description, ...keywords })))

/** What `variableValue` gives for `schema`: undefined only for `text`, which has no default. */
export type Value<S extends TSchema> = S extends { [OptionalKind]: 'Optional' } ? Static<S> | undefined : Static<S>

type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Lowercase<Head>}${Capitalize<CamelCase<Tail>>}`
  : Lowercase<S>

/** The fields the plain (not `custom`) variables of `V` give: `rateLimitPerMinute` from RATE_LIMIT_PER_MINUTE. */
export type Settings<V extends Record<string, TSchema>> = {
  readonly [N in keyof V & string as V[N] extends Custom ? never : CamelCase<N>]: Static<V[N]>
}

/** Every plain variable of `variables` as `read` gives it, under its field name (see Settings). */
export function settings<V extends Record<string, TSchema>>(
  variables: V,
  read: (name: keyof V & string) => unknown,
): Settings<V> {
  const plain = Object.keys(variables).filter((name) => !(CUSTOM in (variables[name] as object)))
  const field = (name: string) => name.toLowerCase().replace(/_(.)/g, (_, letter: string) => letter.toUpperCase())
  return Object.fromEntries(plain.map((name) => [field(name), read(name)])) as Settings<V>
}

/** How a variable's schema reads: a plain JSON Schema with this module's keywords. */
type Declaration = VariableKeywords & {
  type?: string
  minimum?: number
  maximum?: number
  anyOf?: Array<{ const?: unknown }>
  default?: unknown
  description?: string
}

/** The documentation of every variable of `variables`, in their order. */
export function documentation(variables: Record<string, TSchema>): ConfigurationVariable[] {
  return Object.entries(variables).map(([name, schema]) => document(name, schema))
}

function document(name: string, schema: TSchema): ConfigurationVariable {
  const declared = schema as Declaration
  const words = keywords(declared)
  const meaning = (declared.description ?? '')
    .replace('{range}', `${declared.minimum}–${declared.maximum}`)
    .replace('{values}', (words ?? []).map((word) => `\`${word}\``).join(', '))
  const shown = declared['x-default'] ?? (declared.default === undefined ? '(none)' : String(declared.default))
  return { name, default: shown, meaning, file: declared['x-file'] === true }
}

/**
 * The value of variable `name` given as `text`: its schema's default when unset or empty, else the
 * text read as the schema's type (an integer in decimal digits only; a boolean as true/false, 1/0,
 * yes/no or on/off; a word in any case) and checked against the schema. Throws ConfigError naming
 * the variable and what it accepts, never echoing the text (it may be a secret).
 */
export function variableValue<T extends TSchema>(name: string, schema: T, given: string | undefined): Value<T> {
  const declared = schema as Declaration
  if (given === undefined || given === '') return declared.default as Value<T>
  const value = fromText(declared, given)
  if (!validator(schema)(value)) throw new ConfigError(name, problem(declared))
  return value as Value<T>
}

// Converted only where the text is unambiguous; anything else stays text and fails the type check.
// (Ajv's own coercion would take ` 8080`, `1e3` and `0x1F` as numbers.)
function fromText(schema: Declaration, text: string): unknown {
  if (schema.type === 'integer') return /^\d+$/.test(text) ? Number(text) : text
  if (schema.type === 'boolean') {
    if (/^(true|1|yes|on)$/i.test(text)) return true
    if (/^(false|0|no|off)$/i.test(text)) return false
  }
  return keywords(schema) ? text.toLowerCase() : text
}

function problem(schema: Declaration): string {
  if (schema['x-message']) return schema['x-message']
  if (schema.type === 'integer') return `must be an integer from ${schema.minimum} to ${schema.maximum}.`
  if (schema.type === 'boolean') return 'must be true or false.'
  const words = keywords(schema)
  return words ? `must be one of ${words.join(', ')}.` : 'is not valid.'
}

/** The words of a `Type.Union` of string literals, or undefined for any other schema. */
function keywords(schema: Declaration): string[] | undefined {
  const words = schema.anyOf?.map((option) => option.const)
  return words?.every((word) => typeof word === 'string') ? (words as string[]) : undefined
}

// Compiled on first use: `--help` and `copy` compile none. validateSchema off: checking a schema
// against JSON Schema's meta-schema first compiles the meta-schema, 40 ms of a `serve` start-up and
// more in a one-shot command (`keys list`: 100–180 ms), for declarations fixed in code (strict mode
// still refuses an unknown keyword, and test/config.test.ts compiles every variable's schema).
let ajv: Ajv | undefined
const validators = new WeakMap<TSchema, ValidateFunction>()
function validator(schema: TSchema): ValidateFunction {
  let validate = validators.get(schema)
  if (!validate) {
    ajv ??= new Ajv({ keywords: ['x-file', 'x-default', 'x-message'], validateSchema: false })
    validate = ajv.compile(schema)
    validators.set(schema, validate)
  }
  return validate
}

/**
 * Parses a database URL (`sqlite:PATH`, `sqlite::memory:`, `postgres://…`, `postgresql://…`);
 * `pool` applies to PostgreSQL. Throws ConfigError naming `variable`; never echoes the URL (it may
 * hold a password).
 */
export function parseDatabaseUrl(
  value: string,
  cwd: string,
  pool: { poolMax: number; statementTimeoutMs: number },
  variable: string,
): DatabaseConfig {
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length)
    if (path === '') throw new ConfigError(variable, 'must name a file: sqlite:PATH or sqlite::memory:.')
    if (path === ':memory:') return { dialect: 'sqlite', path }
    return { dialect: 'sqlite', path: isAbsolute(path) ? path : resolve(cwd, path) }
  }
  if (/^postgres(ql)?:\/\//.test(value)) {
    if (!URL.canParse(value)) {
      throw new ConfigError(variable, 'is not a valid postgres:// URL: postgres://USER:PASSWORD@HOST:PORT/DATABASE.')
    }
    return { dialect: 'postgres', url: value, ...pool }
  }
  throw new ConfigError(
    variable,
    'must be sqlite:PATH (relative or absolute), sqlite::memory:, or postgres://USER:PASSWORD@HOST:PORT/DATABASE.',
  )
}

/**
 * The streaming replicas of the PostgreSQL `database`, comma-separated `postgres://` URLs (at most
 * `max`, none the primary's own); empty when unset. Throws ConfigError naming `variable` and the
 * entry's position, never a URL (it may hold a password); and when `database` is SQLite, which has
 * no replicas.
 */
export function parseReplicaUrls(
  value: string | undefined,
  database: DatabaseConfig,
  max: number,
  variable: string,
): readonly string[] {
  if (value === undefined) return Object.freeze([])
  if (database.dialect === 'sqlite')
    throw new ConfigError(
      variable,
      'is set, but DATABASE_URL is SQLite: replicas are PostgreSQL streaming replicas. Unset it, or use PostgreSQL.',
    )
  const isReplica = (url: string) => /^postgres(ql)?:\/\//.test(url) && URL.canParse(url) && url !== database.url
  const urls = parseList(
    value,
    variable,
    isReplica,
    'is not usable: each must be a postgres://USER:PASSWORD@HOST:PORT/DATABASE URL of a replica, not DATABASE_URL itself, separated by commas.',
  )
  if (urls.length > max) throw new ConfigError(variable, `lists ${urls.length} replicas; at most ${max} are allowed.`)
  return urls
}

/**
 * The comma-separated entries of `value` (trimmed, empty ones dropped), frozen. Throws ConfigError
 * naming `variable` and the entry's position (never its text: it may be a key) for the first entry
 * `valid` refuses; `problem` says what each must be.
 */
function parseList(value: string | undefined, variable: string, valid: (entry: string) => boolean, problem: string) {
  const entries = (value ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  const bad = entries.findIndex((entry) => !valid(entry))
  if (bad >= 0) throw new ConfigError(variable, `entry ${bad + 1} ${problem}`)
  return Object.freeze(entries)
}

/**
 * API keys, comma-separated, each `KEY[:scope=SCOPE][:rate-limit=N]`: the key an RFC 6750 b64token
 * (so a client can send it; it cannot hold a colon), long and varied enough not to be guessed
 * (key-strength.ts), then what it may do (key-grants.ts): its scope (DEFAULT_KEY_SCOPE unless given)
 * and its own requests per minute (RATE_LIMIT_PER_MINUTE unless given). Each key once: a key listed
 * twice would have two sets of grants, of which only the first would ever be used (appending
 * `KEY:scope=read` would not make KEY read-only). Throws ConfigError naming `variable` and the
 * entry's position (both positions of a repeated key), never the key or a parameter's text (a
 * mistyped key may hold a colon).
 */
export function parseApiKeys(value: string | undefined, variable: string): readonly ConfiguredKey[] {
  const entries = parseList(value, variable, () => true, '')
  const keys = entries.map((entry, index) => parseKeyEntry(entry, `entry ${index + 1}`, variable))
  const positions = new Map<string, number>()
  for (const [index, { key }] of keys.entries()) {
    const first = positions.get(key)
    if (first !== undefined) {
      throw new ConfigError(
        variable,
        `entries ${first + 1} and ${index + 1} are the same key: list each key once, with all its parameters (KEY:scope=read:rate-limit=600).`,
      )
    }
    positions.set(key, index)
  }
  return Object.freeze(keys)
}
const API_KEY_PROBLEM = `is not usable: each key must be at least ${MIN_CONFIGURED_KEY_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (then optional =), random (an estimated ${MIN_CONFIGURED_KEY_BITS}+ bits: no repeated, alternating or sequential patterns), separated by commas. Generate one with: openssl rand -base64 32`
const KEY_PARAMETERS = `after a key, each parameter is :scope=${KEY_SCOPES.join('|')} or :rate-limit=N, at most once, as in KEY:scope=read:rate-limit=600.`

function parseKeyEntry(entry: string, position: string, variable: string): ConfiguredKey {
  const [key = '', ...parameters] = entry.split(':').map((part) => part.trim())
  if (!/^[A-Za-z0-9\-._~+/]+=*$/.test(key) || !isStrongEnough(key))
    throw new ConfigError(variable, `${position} ${API_KEY_PROBLEM}`)
  const given = new Map<string, string>()
  for (const parameter of parameters) {
    const equals = parameter.indexOf('=')
    const name = parameter.slice(0, equals)
    if (equals < 0 || !['scope', 'rate-limit'].includes(name) || given.has(name)) {
      throw new ConfigError(variable, `${position} has a parameter that is not usable: ${KEY_PARAMETERS}`)
    }
    given.set(name, parameter.slice(equals + 1))
  }
  const scope = given.get('scope') ?? DEFAULT_KEY_SCOPE
  if (!isKeyScope(scope)) throw new ConfigError(variable, `${position}: scope must be ${KEY_SCOPES.join(' or ')}.`)
  const rateLimitText = given.get('rate-limit')
  const rateLimit = rateLimitText === undefined ? undefined : parseRateLimit(rateLimitText)
  if (rateLimitText !== undefined && rateLimit === undefined) {
    throw new ConfigError(variable, `${position}: rate-limit must be ${RATE_LIMIT_RULE}.`)
  }
  return Object.freeze({ key, scope, rateLimit })
}

/**
 * Proxies, comma-separated, in the forms Fastify's `trustProxy` (proxy-addr) accepts: addresses,
 * ADDRESS/PREFIX ranges and its named ranges; checked here so that a typo stops start-up naming the
 * variable instead of failing inside the framework. Throws ConfigError naming `variable`.
 */
export function parseTrustProxy(value: string | undefined, variable: string): readonly string[] {
  return parseList(value, variable, isProxy, PROXY_PROBLEM)
}
function isProxy(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true
  const [address = '', prefix, extra] = entry.split('/')
  const version = isIP(address)
  const bits = version === 4 ? 32 : 128
  const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits)
  return version !== 0 && prefixOk && extra === undefined
}
const PROXY_PROBLEM =
  'is not an address or CIDR range: each must be an IP address, ADDRESS/PREFIX (such as 10.0.0.0/8), loopback, linklocal or uniquelocal, separated by commas.'

/**
 * Browser origins, comma-separated, exactly as a browser sends them in `Origin` (RFC 6454 §6.1):
 * scheme, host and an optional port; no path, query, fragment or credentials, no trailing slash.
 * Throws ConfigError naming `variable`.
 */
export function parseCorsOrigins(value: string | undefined, variable: string): readonly string[] {
  const isOrigin = (origin: string) => origin.length <= URL_MAX_LENGTH && isHttpUrl(origin) && new URL(origin).origin === origin
  return parseList(value, variable, isOrigin, ORIGIN_PROBLEM)
}
/**
 * The longest PUBLIC_URL and CORS_ORIGINS entry, in characters: they go into response headers
 * (Location, Link, Access-Control-Allow-Origin), whose lengths openapi.json states from this.
 */
export const URL_MAX_LENGTH = 256
const ORIGIN_PROBLEM = `is not an origin: each must be http(s)://HOST[:PORT] with no path or trailing slash, at most ${URL_MAX_LENGTH} characters, such as https://app.example.com, separated by commas.`

/**
 * The rate-limit store's URL, `redis://[USER:PASSWORD@]HOST[:PORT][/DB]` or `rediss://…` (TLS), as
 * store/rate-limit-store.ts reads it (the user and password percent-decoded); undefined when unset.
 * Throws ConfigError naming `variable`, never echoing the URL (it may hold a password).
 */
export function parseRateLimitStoreUrl(value: string | undefined, variable: string): string | undefined {
  if (value === undefined) return undefined
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (
    !url ||
    !/^rediss?:$/.test(url.protocol) ||
    url.hostname === '' ||
    !/^(\/\d{0,5})?$/.test(url.pathname) ||
    url.search ||
    url.hash
  ) {
    throw new ConfigError(
      variable,
      'must be redis://HOST:PORT or redis://HOST:PORT/DB (a database number), with an optional :PASSWORD@ before the host; rediss:// for TLS.',
    )
  }
  if (!decodes(url.username) || !decodes(url.password)) {
    throw new ConfigError(
      variable,
      'has a % in its user name or password that is not followed by two hexadecimal digits (of UTF-8): write a % itself as %25.',
    )
  }
  return value
}

/** Whether `text` percent-decodes (decodeURIComponent throws URIError otherwise). */
function decodes(text: string): boolean {
  try {
    decodeURIComponent(text)
    return true
  } catch {
    return false
  }
}

/** Whether `text` is an absolute http: or https: URL. */
export const isHttpUrl = (text: string): boolean => URL.canParse(text) && /^https?:$/.test(new URL(text).protocol)

/**
 * The public base URL, without trailing slashes; undefined when unset. Throws ConfigError naming
 * `variable` unless it is an http(s) URL ending in /v1 and already in the WHATWG parser's normal
 * form: it goes verbatim into `Location`, `Link` and the OpenAPI `servers`, and the parser silently
 * drops CR, LF and TAB and percent-encodes `"<>` and spaces, so a value it would change (or one with
 * credentials, published in the document) is refused rather than used raw.
 */
export function parsePublicUrl(value: string | undefined, variable: string): string | undefined {
  if (value === undefined) return undefined
  const trimmed = value.replace(/\/+$/, '')
  const url = isHttpUrl(trimmed) ? new URL(trimmed) : undefined
  if (
    !url ||
    trimmed.length > URL_MAX_LENGTH ||
    url.hostname === '' ||
    url.username !== '' ||
    url.password !== '' ||
    url.href.replace(/\/$/, '') !== trimmed ||
    !trimmed.endsWith('/v1') ||
    url.search ||
    url.hash
  ) {
    throw new ConfigError(
      variable,
      `must be an absolute http(s) URL ending in /v1, such as https://api.example.com/v1, at most ${URL_MAX_LENGTH} characters, in normal form: no user or password, no spaces, control characters, quotes or angle brackets, host in lower case.`,
    )
  }
  return trimmed
}
