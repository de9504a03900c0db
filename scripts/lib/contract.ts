// Checks a real response against the committed openapi.json: the status is one the operation
// documents, every header of ours it carries is documented on that response, the body is JSON
// matching that response's schema, and an Error body is consistent.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { Ajv2020 } from 'ajv/dist/2020.js'
import { ERROR_CODES } from '../../src/http/errors.js'

/** The committed OpenAPI document. */
export const openapi = JSON.parse(readFileSync(new URL('../../openapi.json', import.meta.url), 'utf8'))

const ajv = new Ajv2020({ strict: false, allErrors: true, formats: { int64: true, int32: true } })
ajv.addSchema(openapi, 'openapi.json')

const TEMPLATES: Array<[RegExp, string]> = [
  [/^\/v1\/pets$/, '/pets'],
  [/^\/v1\/pets\/[^/]+$/, '/pets/{petId}'],
]

function pointer(...segments: string[]): string {
  return segments.map((segment) => segment.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
}

/**
 * The response headers the service sends (besides Content-Type and the like, and CORS's, which
 * depend on the deployment and are described in the document's description): each one seen must
 * be documented on the response of the operation it came from.
 */
const SERVICE_HEADERS = [
  'x-request-id',
  'cache-control',
  'x-content-type-options',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'link',
  'location',
  'deprecation',
  'sunset',
  'allow',
  'www-authenticate',
  'etag',
]

/** A response's Header Object, itself or the components/headers entry it refers to. */
function headerObject(header: { $ref?: string; schema?: object }): { schema?: object } {
  const name = header.$ref?.slice('#/components/headers/'.length)
  return name === undefined ? header : openapi.components.headers[name]
}

/** A response as the test client saw it. */
export interface SeenResponse {
  status: number
  headers: Headers
  text: string
}

/**
 * Asserts `response` to `method path` is allowed by openapi.json. Paths the document does not list
 * (unknown routes, probes) are only checked to carry a valid Error body when they fail.
 */
export function assertMatchesContract(method: string, path: string, response: SeenResponse): void {
  const route = path.split('?', 1)[0] ?? ''
  const template = TEMPLATES.find(([pattern]) => pattern.test(route))?.[1]
  const operation = template && openapi.paths[template]?.[method.toLowerCase()]
  const where = `${method} ${path} → ${response.status}`
  assert.ok(response.headers.get('x-request-id'), `${where}: every response carries X-Request-Id`)
  if (method === 'HEAD' || response.status === 204) return
  if (operation) {
    const documented = operation.responses[String(response.status)]
    assert.ok(documented, `${where}: status not documented for ${operation.operationId}`)
    const names = new Set(Object.keys(documented.headers ?? {}).map((name) => name.toLowerCase()))
    for (const name of SERVICE_HEADERS.filter((header) => response.headers.has(header))) {
      assert.ok(names.has(name), `${where}: header ${name} not documented on this response of ${operation.operationId}`)
      // The value keeps to the documented limits (maxLength, pattern, enum).
      const documentedName = Object.keys(documented.headers).find((header) => header.toLowerCase() === name) as string
      const { schema } = headerObject(documented.headers[documentedName])
      assert.ok(schema, `${where}: header ${name} is documented without a schema`)
      const validate = ajv.compile(schema)
      const value = response.headers.get(name)
      assert.ok(
        validate(value),
        `${where}: header ${name}: ${value} breaks its documented schema: ${ajv.errorsText(validate.errors)}`,
      )
    }
  } else if (template && response.status === 405) {
    // described once, in the document's description: a method the path does not offer
    assert.ok(response.headers.get('allow'), `${where}: 405 names the methods in Allow`)
  } else if (response.status < 400) {
    return
  }
  if (response.status === 304) {
    assert.equal(response.text, '', `${where}: a 304 has no body`)
    return
  }
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/, `${where}: content type`)
  const body = JSON.parse(response.text)
  const schemaRef = operation
    ? `openapi.json#/${pointer('paths', template, method.toLowerCase(), 'responses', String(response.status), 'content', 'application/json', 'schema')}`
    : 'openapi.json#/components/schemas/Error'
  const validate = ajv.getSchema(schemaRef)
  assert.ok(validate, `${where}: no schema at ${schemaRef}`)
  assert.ok(validate(body), `${where}: body does not match the document: ${ajv.errorsText(validate.errors)} in ${response.text}`)
  if (response.status >= 400) {
    assert.equal(body.status, response.status, `${where}: Error.status repeats the HTTP status`)
    const entry = ERROR_CODES[body.code as keyof typeof ERROR_CODES]
    assert.equal(entry?.status, response.status, `${where}: code ${body.code} belongs to this status`)
  }
}
