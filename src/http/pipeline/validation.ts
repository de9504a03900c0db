// Request validation: one Ajv instance over the TypeBox route schemas, made int64-exact (bigint
// values are validated, never rounded) and strict (no type coercion), and its failures turned into
// one `invalid_request` error that lists every failing input.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import type { FastifySchema, FastifySchemaCompiler } from 'fastify'
import { INT64_MAX, INT64_MIN, parseIntegerText, validateWithBigInts } from '../../int64.js'
import { ApiError, BODY_REQUIRED_MESSAGE, type ErrorDetail } from '../errors.js'
import type { CursorCodec } from '../routes/cursor.js'

type Part = ErrorDetail['in']
type Result = true | { error: ApiError } | { value: unknown }

const PARTS: Record<string, Part> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' }

/**
 * Fastify validator compiler. `sharedSchemas` are the `$id` schemas routes may `$ref`; `cursors`
 * checks `format: cursor` (a listPets cursor this service signed).
 * Body values are checked as sent (no coercion); query and path values declared `integer` are
 * parsed exactly from their text (see parseIntegerText) and everything else stays a string.
 * A failure returns ApiError `invalid_request` with one detail per failing input.
 */
export function buildValidatorCompiler(
  sharedSchemas: object[],
  cursors: Pick<CursorCodec, 'verify'>,
): FastifySchemaCompiler<FastifySchema> {
  const ajv = new Ajv({
    allErrors: true,
    useDefaults: true,
    coerceTypes: false,
    removeAdditional: false,
    verbose: true,
    schemas: sharedSchemas,
    formats: {
      int64: { type: 'number', validate: Number.isSafeInteger },
      cursor: { type: 'string', validate: (text: string) => cursors.verify(text) !== undefined },
    },
    keywords: ['x-pattern-message'],
    // The schemas are fixed in code (schemas.ts, checked as openapi.json by the lint and the OpenAPI
    // tests); checking them against JSON Schema's meta-schema first compiles the meta-schema, about
    // 35 ms of every app built. Strict mode still refuses an unknown keyword.
    validateSchema: false,
  })
  return ({ schema, httpPart }) => {
    const part = PARTS[httpPart ?? 'body'] ?? 'body'
    const validate = ajv.compile(part === 'header' ? lowerCaseProperties(schema) : (schema as object))
    if (part === 'body') return (data: unknown) => validateBody(validate, data)
    // Header values are strings as sent: checked in place (no copy; no integers to parse).
    if (part === 'header') return (data: unknown) => (validate(data) ? true : fail(part, toDetails(part, validate.errors ?? [])))
    const integerFields = integerProperties(schema)
    return (data: unknown) => validateStrings(validate, part, integerFields, data as Record<string, unknown>)
  }
}

// Node gives header names in lowercase; a schema names them as documented (`Idempotency-Key`).
// (Fastify does this itself only with its default compiler.)
function lowerCaseProperties(schema: unknown): object {
  const { properties = {}, required = [], ...rest } = schema as { properties?: Record<string, unknown>; required?: string[] }
  return {
    ...rest,
    properties: Object.fromEntries(Object.entries(properties).map(([name, property]) => [name.toLowerCase(), property])),
    required: required.map((name) => name.toLowerCase()),
  }
}

function validateBody(validate: ValidateFunction, data: unknown): Result {
  if (data === null || data === undefined) {
    return fail('body', [{ in: 'body', field: '', message: 'is required' }], BODY_REQUIRED_MESSAGE)
  }
  return validateWithBigInts(validate, data) ? true : fail('body', toDetails('body', validate.errors ?? []))
}

function validateStrings(validate: ValidateFunction, part: Part, integerFields: string[], data: Record<string, unknown>): Result {
  const value: Record<string, unknown> = { ...data }
  for (const field of integerFields) {
    const text = value[field]
    if (typeof text === 'string') value[field] = parseIntegerText(text)
  }
  return validateWithBigInts(validate, value) ? { value } : fail(part, toDetails(part, validate.errors ?? []))
}

function fail(part: Part, details: ErrorDetail[], message?: string): { error: ApiError } {
  const where = {
    body: 'request body is',
    query: 'query parameters are',
    path: 'path parameter is',
    header: 'request headers are',
  }[part]
  return { error: new ApiError('invalid_request', { message: message ?? `The ${where} not valid; see details.`, details }) }
}

function integerProperties(schema: unknown): string[] {
  const properties = (schema as { properties?: Record<string, { type?: unknown }> }).properties ?? {}
  return Object.keys(properties).filter((name) => properties[name]?.type === 'integer')
}

const FORMAT_MESSAGES: Record<string, string> = {
  int64: `must be a signed 64-bit integer (${INT64_MIN} to ${INT64_MAX})`,
  cursor: 'is not a cursor this service issued',
}

const ARTICLE: Record<string, string> = { integer: 'an integer', object: 'a JSON object', array: 'an array', string: 'a string' }

function toDetails(part: Part, errors: ErrorObject[]): ErrorDetail[] {
  return errors.map((error) => {
    const path = error.instancePath
      .split('/')
      .slice(1)
      .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    const { params } = error
    switch (error.keyword) {
      case 'required':
        return detail(part, [...path, params.missingProperty], 'is required')
      case 'additionalProperties':
        return detail(part, [...path, params.additionalProperty], `is not a known ${part === 'body' ? 'field' : 'parameter'}`)
      case 'type':
        return detail(part, path, `must be ${ARTICLE[params.type] ?? params.type}`)
      case 'format':
        return detail(part, path, FORMAT_MESSAGES[params.format] ?? `must be a valid ${params.format}`)
      case 'enum':
        return detail(part, path, `must be one of: ${params.allowedValues.join(', ')}`)
      case 'minLength':
        return detail(part, path, `must be at least ${params.limit} character${params.limit === 1 ? '' : 's'} long`)
      case 'maxLength':
        return detail(part, path, `must be at most ${params.limit} characters long`)
      case 'pattern':
        return detail(part, path, error.parentSchema?.['x-pattern-message'] ?? 'has a form that is not allowed')
      default:
        return detail(part, path, error.message ?? 'is not valid')
    }
  })
}

function detail(part: Part, path: string[], message: string): ErrorDetail {
  return { in: part, field: path.join('.'), message }
}
