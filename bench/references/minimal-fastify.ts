// The minimal Fastify reference (`minimal-fastify`): the plainest Fastify 5 app doing the service's work for the bench's
// requests and nothing more: the key check with the service's 401 (the connection kept), Ajv validation, an
// int64-exact body parse, keyset pages with a `Link` to the next one, fast-json-stringify through response schemas,
// prepared (named) statements, a `pg` pool of BENCH_POOL_MAX. No logs, metrics, rate limit or request ids.
// `node minimal-fastify.js sqlite|postgres`; prints `minimal-fastify listening on http://127.0.0.1:PORT`.
import type { Ajv } from 'ajv'
import Fastify from 'fastify'
import {
  AUTHORIZATION,
  announceListening,
  DATABASE_LOCATION,
  databaseArgument,
  exactIntegers,
  INVALID_KEY,
  isInt64,
  JSON_TYPE,
  MISSING_KEY,
  NOT_FOUND,
  PAGE_LIMIT,
  STATUSES,
  WWW_AUTHENTICATE,
} from './contract.js'
import { openPetRows } from './pet-rows.js'

const NAME = 'minimal-fastify'
const rows = await openPetRows(databaseArgument(NAME), DATABASE_LOCATION, {
  named: true,
  poolSize: Number(process.env.BENCH_POOL_MAX ?? 5),
})
const MISSING = JSON.stringify(MISSING_KEY)
const INVALID = JSON.stringify(INVALID_KEY)
const ABSENT = JSON.stringify(NOT_FOUND)
const CHALLENGE = { 'www-authenticate': WWW_AUTHENTICATE }
const int64 = { type: 'string', pattern: '^-?[0-9]{1,19}$' }
const status = { type: 'string', enum: STATUSES }
const pet = {
  type: 'object',
  properties: { id: { type: 'integer' }, name: { type: 'string' }, categoryId: { type: 'integer' }, status },
}
const app = Fastify({
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
  const given = request.headers.authorization
  if (given === AUTHORIZATION || request.url === '/healthz') return done()
  reply
    .code(401)
    .headers(CHALLENGE)
    .type(JSON_TYPE)
    .send(given === undefined ? MISSING : INVALID)
})
app.get('/healthz', async () => ({ status: 'ok' }))
app.get<{ Querystring: { limit: number; status?: string; cursor?: string } }>(
  '/v1/pets',
  {
    schema: {
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
app.get<{ Params: { id: string } }>(
  '/v1/pets/:id',
  { schema: { params: { type: 'object', properties: { id: int64 } }, response: { 200: pet } } },
  async (request, reply) => (await rows.find(BigInt(request.params.id))) ?? reply.code(404).type(JSON_TYPE).send(ABSENT),
)
app.post<{ Body: { name: string; categoryId: bigint | number; status?: string } }>(
  '/v1/pets',
  {
    schema: {
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
await app.listen({ host: '127.0.0.1', port: 0 })
announceListening(NAME, app.server.address())
