// The reference app for SQLite: the plainest Fastify 5 + better-sqlite3 app serving the bench's routes (list with
// limit and status, get by id, create, 401), with Fastify's defaults: its JSON body parser, Ajv validation, and
// fast-json-stringify through a response schema. No int64 care, no metrics, no rate limit, no request log.
// Run by bench/run.ts as plain JavaScript; environment: REFERENCE_DATABASE (an SQLite file, already migrated),
// REFERENCE_AUTHORIZATION (the exact Authorization header to accept). Prints `listening on http://HOST:PORT`.
import BetterSqlite3 from 'better-sqlite3'
import Fastify from 'fastify'

const authorization = process.env.REFERENCE_AUTHORIZATION ?? ''
const database = new BetterSqlite3(process.env.REFERENCE_DATABASE ?? '')
database.pragma('journal_mode = WAL')
// An fsync per commit, as the service promises for a 201.
database.pragma('synchronous = FULL')
const columns = 'id, name, category_id as categoryId, status'
const listAll = database.prepare(`select ${columns} from pets order by id limit ?`)
const listByStatus = database.prepare(`select ${columns} from pets where status = ? order by id limit ?`)
const findById = database.prepare(`select ${columns} from pets where id = ?`)
const insert = database.prepare(`insert into pets (name, category_id, status) values (?, ?, ?) returning ${columns}`)

const status = { type: 'string', enum: ['available', 'pending', 'sold'] }
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
  async (request) =>
    request.query.status === undefined
      ? listAll.all(request.query.limit)
      : listByStatus.all(request.query.status, request.query.limit),
)
app.get<{ Params: { id: number } }>(
  '/v1/pets/:id',
  {
    schema: {
      params: { type: 'object', properties: { id: { type: 'integer' } } },
      response: { 200: pet, 404: error },
    },
  },
  async (request, reply) =>
    findById.get(request.params.id) ?? reply.code(404).send({ code: 'not_found', message: 'No such pet.', status: 404 }),
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
    return reply.code(201).send(insert.get(name, categoryId, given ?? 'available'))
  },
)

const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`fastify-sqlite listening on ${address}\n`)
