// The typical Fastify reference (`typical-fastify`): the Fastify 5 app a team would ship for this contract, with the
// plugins such an app carries: pino request logging at info to stdout, a request id taken from X-Request-Id or
// generated and echoed, @fastify/bearer-auth, @fastify/rate-limit counted on every request (its limit never reached),
// @fastify/cors, fastify-metrics (GET /metrics), @fastify/swagger (GET /openapi.json), route-schema validation and
// serialization, getPet's deprecation headers, and plain `select … order by id limit $n` statements (unnamed) through a
// `pg` Pool of 10, rows serialized in Node; on SQLite, better-sqlite3 prepared statements. int64 stays exact.
// `node typical-fastify.js sqlite|postgres`; prints `typical-fastify listening on http://127.0.0.1:PORT`.
import { randomUUID } from 'node:crypto'
import bearerAuth from '@fastify/bearer-auth'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import swagger from '@fastify/swagger'
import type { Ajv } from 'ajv'
import Fastify from 'fastify'
import fastifyMetrics from 'fastify-metrics'
import {
  AUTHORIZATION,
  announceListening,
  DATABASE_LOCATION,
  DEPRECATION_HEADERS,
  databaseArgument,
  exactIntegers,
  isInt64,
  NOT_FOUND,
  PAGE_LIMIT,
  STATUSES,
  WWW_AUTHENTICATE,
} from './contract.js'
import { openPetRows } from './pet-rows.js'

const NAME = 'typical-fastify'
const rows = await openPetRows(databaseArgument(NAME), DATABASE_LOCATION, { named: false, poolSize: 10 })
const int64 = { type: 'string', pattern: '^-?[0-9]{1,19}$' }
const status = { type: 'string', enum: STATUSES }
const pet = {
  type: 'object',
  required: ['id', 'name', 'categoryId', 'status'],
  properties: { id: { type: 'integer' }, name: { type: 'string' }, categoryId: { type: 'integer' }, status },
}
const error = {
  type: 'object',
  properties: { code: { type: 'string' }, message: { type: 'string' }, status: { type: 'integer' } },
}

const app = Fastify({
  logger: { level: 'info' },
  requestIdHeader: 'x-request-id',
  genReqId: () => randomUUID(),
  ajv: {
    plugins: [(ajv: Ajv) => ajv.addKeyword({ keyword: 'int64', validate: (_: unknown, value: unknown) => isInt64(value) })],
  },
})
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
  try {
    done(null, JSON.parse(body as string, exactIntegers))
  } catch (failure) {
    done(Object.assign(failure as Error, { statusCode: 400 }), undefined)
  }
})
app.addHook('onRequest', (request, reply, done) => {
  reply.header('x-request-id', request.id)
  done()
})
await app.register(cors, { origin: ['https://pets.example.com'] })
await app.register(rateLimit, { global: false, max: 10_000_000, timeWindow: '1 minute' })
// As an app-level hook, it runs before the key check of /v1 (route-level hooks, the plugin's default, run after it), so
// a refused key is counted too.
app.addHook('onRequest', app.rateLimit())
// A CommonJS module whose plugin is its `default` export: from ESM, the default import is the module object.
await app.register(fastifyMetrics.default, { endpoint: '/metrics' })
await app.register(swagger, { openapi: { info: { title: 'Animal Store', version: '1.0.0' } } })
app.get('/healthz', async () => ({ status: 'ok' }))
app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())

await app.register(
  async (v1) => {
    // The plugin's own 401 body (`{"error": "…"}`: its types allow no other shape).
    await v1.register(bearerAuth, { keys: [AUTHORIZATION.slice('Bearer '.length)] })
    // The plugin's 401 carries no challenge; RFC 6750 asks for one.
    v1.addHook('onSend', (_request, reply, payload, done) => {
      if (reply.statusCode === 401) reply.header('www-authenticate', WWW_AUTHENTICATE)
      done(null, payload)
    })
    v1.get<{ Querystring: { limit: number; status?: string; cursor?: string } }>(
      '/pets',
      {
        schema: {
          operationId: 'listPets',
          querystring: {
            type: 'object',
            additionalProperties: false,
            properties: { limit: { type: 'integer', ...PAGE_LIMIT }, status, cursor: int64 },
          },
          response: { 200: { type: 'array', items: pet } },
        },
      },
      async (request, reply) => {
        const { limit, status: wanted, cursor } = request.query
        const page = await rows.list(cursor === undefined ? 0n : BigInt(cursor), wanted, limit + 1)
        if (page.length > limit) {
          page.length = limit
          const filter = wanted === undefined ? '' : `&status=${wanted}`
          reply.header('link', `</v1/pets?limit=${limit}${filter}&cursor=${page[limit - 1]?.id}>; rel="next"`)
        }
        return page
      },
    )
    v1.get<{ Params: { id: string } }>(
      '/pets/:id',
      {
        schema: {
          operationId: 'getPet',
          deprecated: true,
          params: { type: 'object', properties: { id: int64 } },
          response: { 200: pet, 404: error },
        },
      },
      async (request, reply) => {
        reply.headers(DEPRECATION_HEADERS)
        const found = await rows.find(BigInt(request.params.id))
        return found ?? reply.code(404).send(NOT_FOUND)
      },
    )
    v1.post<{ Body: { name: string; categoryId: bigint | number; status?: string } }>(
      '/pets',
      {
        schema: {
          operationId: 'createPet',
          body: {
            type: 'object',
            required: ['name', 'categoryId'],
            additionalProperties: false,
            properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, categoryId: { int64: true }, status },
          },
          response: { 201: pet },
        },
      },
      async (request, reply) => {
        const { name, categoryId, status: given = 'available' } = request.body
        const created = await rows.insert(name, categoryId, given)
        return reply.code(201).header('location', `/v1/pets/${created.id}`).send(created)
      },
    )
  },
  { prefix: '/v1' },
)
await app.listen({ host: '127.0.0.1', port: 0 })
announceListening(NAME, app.server.address())
