// The reference app for PostgreSQL: the plainest Fastify 5 + pg app serving the bench's routes (list with limit and
// status, get by id, create, 401), with Fastify's defaults: its JSON body parser, Ajv validation, and
// fast-json-stringify through a response schema. No int64 care, no metrics, no rate limit, no request log.
// Run by bench/run.ts as plain JavaScript; environment: REFERENCE_DATABASE (a postgres:// URL, already migrated),
// REFERENCE_POOL_MAX (connections, the service's DATABASE_POOL_MAX default), REFERENCE_AUTHORIZATION (the exact
// Authorization header to accept). Prints `listening on http://HOST:PORT`.
import Fastify from 'fastify'
import pg from 'pg'

const authorization = process.env.REFERENCE_AUTHORIZATION ?? ''
const pool = new pg.Pool({ connectionString: process.env.REFERENCE_DATABASE, max: Number(process.env.REFERENCE_POOL_MAX ?? 5) })
const columns = 'id, name, category_id as "categoryId", status'

const status = { type: 'string', enum: ['available', 'pending', 'sold'] }
// pg returns bigint columns as strings; fast-json-stringify writes them as JSON integers.
const pet = {
  type: 'object',
  properties: { id: { type: 'integer' }, name: { type: 'string' }, categoryId: { type: 'integer' }, status },
}
const error = {
  type: 'object',
  properties: { code: { type: 'string' }, message: { type: 'string' }, status: { type: 'integer' } },
}

const app = Fastify()
app.addHook('onRequest', async (request, reply) => {
  if (request.url !== '/healthz' && request.headers.authorization !== authorization) {
    return reply
      .code(401)
      .header('www-authenticate', 'Bearer realm="animal-store"')
      .send({ code: 'missing_api_key', message: 'An API key is required: send "Authorization: Bearer <API_KEY>".', status: 401 })
  }
})
app.get('/healthz', async () => ({ status: 'ok' }))
app.get<{ Querystring: { limit: number; status?: string } }>(
  '/v1/pets',
  {
    schema: {
      querystring: {
        type: 'object',
        properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, status },
      },
      response: { 200: { type: 'array', items: pet } },
    },
  },
  async (request) => {
    const { limit, status: wanted } = request.query
    const result =
      wanted === undefined
        ? await pool.query(`select ${columns} from pets order by id limit $1`, [limit])
        : await pool.query(`select ${columns} from pets where status = $1 order by id limit $2`, [wanted, limit])
    return result.rows
  },
)
app.get<{ Params: { id: number } }>(
  '/v1/pets/:id',
  {
    schema: {
      params: { type: 'object', properties: { id: { type: 'integer' } } },
      response: { 200: pet, 404: error },
    },
  },
  async (request, reply) => {
    const result = await pool.query(`select ${columns} from pets where id = $1`, [request.params.id])
    return result.rows[0] ?? reply.code(404).send({ code: 'not_found', message: 'No such pet.', status: 404 })
  },
)
app.post<{ Body: { name: string; categoryId: number; status?: string } }>(
  '/v1/pets',
  {
    schema: {
      body: {
        type: 'object',
        required: ['name', 'categoryId'],
        additionalProperties: false,
        properties: { name: { type: 'string', minLength: 1, maxLength: 255 }, categoryId: { type: 'integer' }, status },
      },
      response: { 201: pet },
    },
  },
  async (request, reply) => {
    const { name, categoryId, status: given } = request.body
    const result = await pool.query(`insert into pets (name, category_id, status) values ($1, $2, $3) returning ${columns}`, [
      name,
      categoryId,
      given ?? 'available',
    ])
    return reply.code(201).send(result.rows[0])
  },
)

const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`fastify-pg listening on ${address}\n`)
