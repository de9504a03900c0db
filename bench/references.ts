// The bench's reference servers, one file so they share what the contract fixes (the key check, the 401 that closes its
// connection, the Pet JSON): `bare` (node:http, canned answers: the floor), `sqlite` (the plainest Fastify 5 +
// better-sqlite3 app, an fsync per commit) and `postgres` (Fastify 5 + pg). Run by bench/run.ts as plain JavaScript:
// `node references.js MODE`; environment BENCH_AUTHORIZATION (the exact header accepted), BENCH_DATABASE (an SQLite
// file or a postgres:// URL, migrated and seeded), BENCH_POOL_MAX. Prints `MODE listening on http://127.0.0.1:PORT`.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Ajv } from 'ajv'

const mode = process.argv[2]
const authorization = process.env.BENCH_AUTHORIZATION ?? ''
const databaseLocation = process.env.BENCH_DATABASE ?? ''
const JSON_TYPE = 'application/json; charset=utf-8'
const CHALLENGE = { 'www-authenticate': 'Bearer realm="animal-store"', connection: 'close' }
const error = (code: string, message: string, status: number) => JSON.stringify({ code, message, status })
const MISSING = error('missing_api_key', 'An API key is required: send "Authorization: Bearer <API_KEY>".', 401)
const INVALID = error('invalid_api_key', 'The API key is not valid, or has been revoked.', 401)
const NOT_FOUND = error('pet_not_found', 'No animal with that identifier.', 404)
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const STATUSES = ['available', 'pending', 'sold']
const listening = (address: AddressInfo) => process.stdout.write(`${mode} listening on http://127.0.0.1:${address.port}\n`)

if (mode === 'bare') bare()
else if (mode === 'sqlite' || mode === 'postgres') await fastify(mode)
else throw new Error(`usage: references.js bare|sqlite|postgres (got ${mode})`)

/** The floor: node:http answering each bench request with a body of the service's shape, doing none of its work. */
function bare(): void {
  // A seeded pet's JSON (bench/databases.ts: name `pet-ID`, category `ID % 1000 + 1`).
  const pet = (id: number, status: string) =>
    `{"id":${id},"name":"pet-${id}","categoryId":${(id % 1000) + 1},"status":"${status}"}`
  const pages = new Map<string, string>()
  let nextId = 100_000
  const server = createServer((request, response) => {
    const url = request.url ?? ''
    const [path = '', query = ''] = url.split('?')
    const send = (status: number, body: string, headers: Record<string, string> = {}) =>
      response.writeHead(status, { ...headers, 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) }).end(body)
    if (path === '/healthz') return send(200, '{"status":"ok"}')
    const given = request.headers.authorization
    if (given !== authorization) return send(401, given === undefined ? MISSING : INVALID, CHALLENGE)
    if (path === '/v1/pets' && request.method === 'POST') {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const id = nextId++
        send(201, `{"id":${id},${Buffer.concat(chunks).toString().slice(1)}`, { location: `/v1/pets/${id}` })
      })
      return
    }
    if (path === '/v1/pets') {
      const key = query.replace(/&?cursor=[^&]*/, '')
      let page = pages.get(key)
      if (page === undefined) {
        const params = new URLSearchParams(query)
        const status = params.get('status')
        const limit = Number(params.get('limit') ?? 20)
        page = `[${Array.from({ length: limit }, (_, i) => pet(i + 1, status ?? (STATUSES[i % 3] as string))).join(',')}]`
        pages.set(key, page)
      }
      return send(200, page)
    }
    const id = /^\/v1\/pets\/(\d+)$/.exec(path)?.[1]
    return id ? send(200, pet(Number(id), 'available')) : send(404, NOT_FOUND)
  })
  server.listen(0, '127.0.0.1', () => listening(server.address() as AddressInfo))
}

/** What the Fastify app asks of its driver; int64 columns come back as bigint, so the JSON keeps their digits. */
interface PetRows {
  list(afterId: bigint, status: string | undefined, limit: number): Promise<unknown[]> | unknown[]
  find(id: bigint): Promise<unknown> | unknown
  insert(name: string, categoryId: bigint | number, status: string): Promise<unknown> | unknown
}

/** better-sqlite3 as the service opens it (WAL, synchronous=FULL: an fsync per commit), with prepared statements. */
async function sqliteRows(): Promise<PetRows> {
  const { default: Database } = await import('better-sqlite3')
  const database = new Database(databaseLocation)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = FULL')
  const columns = 'id, name, category_id as categoryId, status'
  const prepare = (sql: string) => database.prepare(sql).safeIntegers(true)
  const all = prepare(`select ${columns} from pets where id > ? order by id limit ?`)
  const byStatus = prepare(`select ${columns} from pets where status = ? and id > ? order by id limit ?`)
  const find = prepare(`select ${columns} from pets where id = ?`)
  const insert = prepare(`insert into pets (name, category_id, status) values (?, ?, ?) returning ${columns}`)
  return {
    list: (afterId, status, limit) => (status === undefined ? all.all(afterId, limit) : byStatus.all(status, afterId, limit)),
    find: (id) => find.get(id),
    insert: (name, categoryId, status) => insert.get(name, categoryId, status),
  }
}

/** A pg pool (the service's default size) with named statements, int8 parsed to bigint. */
async function postgresRows(): Promise<PetRows> {
  const { default: pg } = await import('pg')
  pg.types.setTypeParser(pg.types.builtins.INT8, BigInt)
  const pool = new pg.Pool({ connectionString: databaseLocation, max: Number(process.env.BENCH_POOL_MAX ?? 5) })
  const columns = 'id, name, category_id as "categoryId", status'
  const query = async (name: string, text: string, values: unknown[]) => (await pool.query({ name, text, values })).rows
  return {
    list: (afterId, status, limit) =>
      status === undefined
        ? query('all', `select ${columns} from pets where id > $1 order by id limit $2`, [afterId, limit])
        : query('by-status', `select ${columns} from pets where status = $1 and id > $2 order by id limit $3`, [
            status,
            afterId,
            limit,
          ]),
    find: async (id) => (await query('find', `select ${columns} from pets where id = $1`, [id]))[0],
    insert: async (name, categoryId, status) =>
      (
        await query('insert', `insert into pets (name, category_id, status) values ($1, $2, $3) returning ${columns}`, [
          name,
          categoryId,
          status,
        ])
      )[0],
  }
}

/**
 * The plainest Fastify app doing the service's work for the bench's requests: the key check, Ajv validation, an
 * int64-exact body parse, keyset pages with a `Link` to the next one, fast-json-stringify through response schemas.
 */
async function fastify(driver: 'sqlite' | 'postgres'): Promise<void> {
  const { default: Fastify } = await import('fastify')
  const rows = driver === 'sqlite' ? await sqliteRows() : await postgresRows()
  const int64 = { type: 'string', pattern: '^-?[0-9]{1,19}$' }
  const status = { type: 'string', enum: STATUSES }
  const pet = {
    type: 'object',
    properties: { id: { type: 'integer' }, name: { type: 'string' }, categoryId: { type: 'integer' }, status },
  }
  const app = Fastify({
    ajv: {
      plugins: [
        (ajv: Ajv) =>
          ajv.addKeyword({
            keyword: 'int64',
            validate: (_: unknown, value: unknown) =>
              typeof value === 'bigint' ? value >= INT64_MIN && value <= INT64_MAX : Number.isSafeInteger(value),
          }),
      ],
    },
  })
  // JSON.parse loses digits past 2^53: integers it cannot hold exactly keep their source text as a bigint.
  const exact = (_key: string, value: unknown, context?: { source?: string }) =>
    typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '')
      ? BigInt(context?.source as string)
      : value
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string, exact))
    } catch (failure) {
      done(Object.assign(failure as Error, { statusCode: 400 }), undefined)
    }
  })
  app.addHook('onRequest', (request, reply, done) => {
    const given = request.headers.authorization
    if (given === authorization || request.url === '/healthz') return done()
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
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            status,
            cursor: int64,
          },
        },
        response: { 200: { type: 'array', items: pet } },
      },
    },
    async (request, reply) => {
      const { limit, status: wanted, cursor } = request.query
      const page = (await rows.list(cursor === undefined ? 0n : BigInt(cursor), wanted, limit + 1)) as { id: bigint }[]
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
    async (request, reply) => (await rows.find(BigInt(request.params.id))) ?? reply.code(404).type(JSON_TYPE).send(NOT_FOUND),
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
      const created = (await rows.insert(name, categoryId, given)) as { id: bigint }
      return reply.code(201).header('location', `/v1/pets/${created.id}`).send(created)
    },
  )
  await app.listen({ host: '127.0.0.1', port: 0 })
  listening(app.server.address() as AddressInfo)
}
