// The typical Express reference (`typical-express`): the Express 5 app a team would ship for this contract, with the
// middlewares such an app carries: pino-http request logging at info to stdout (a request id taken from X-Request-Id
// or generated, and echoed), cors, a prom-client middleware (a request counter and a duration histogram; GET /metrics),
// express-rate-limit counted on every request (its limit never reached), the bearer key check, zod request
// validation, getPet's deprecation headers, and the same statements as the typical Fastify app (a `pg` Pool of 10,
// unnamed; better-sqlite3 prepared statements), rows serialized by res.json. int64 stays exact.
// `node typical-express.js sqlite|postgres`; prints `typical-express listening on http://127.0.0.1:PORT`.
import { randomUUID } from 'node:crypto'
import cors from 'cors'
import express, { type NextFunction, type Request, type Response } from 'express'
import { rateLimit } from 'express-rate-limit'
import { pinoHttp } from 'pino-http'
import { Counter, collectDefaultMetrics, Histogram, register } from 'prom-client'
import { z } from 'zod'
import {
  AUTHORIZATION,
  announceListening,
  bigintDigits,
  DATABASE_LOCATION,
  DEPRECATION_HEADERS,
  databaseArgument,
  errorBody,
  exactIntegers,
  INVALID_KEY,
  isInt64,
  MISSING_KEY,
  NOT_FOUND,
  PAGE_LIMIT,
  STATUSES,
  WWW_AUTHENTICATE,
} from './contract.js'
import { openPetRows } from './pet-rows.js'

const NAME = 'typical-express'
const rows = await openPetRows(databaseArgument(NAME), DATABASE_LOCATION, { named: false, poolSize: 10 })

const digits = z.string().regex(/^-?[0-9]{1,19}$/)
const ListQuery = z
  .object({
    limit: z.coerce.number().int().min(PAGE_LIMIT.minimum).max(PAGE_LIMIT.maximum).default(PAGE_LIMIT.default),
    status: z.enum(STATUSES).optional(),
    cursor: digits.optional(),
  })
  .strict()
const NewPet = z
  .object({
    name: z.string().min(1).max(255),
    categoryId: z.union([z.number(), z.bigint()]).refine(isInt64, 'must be an int64'),
    status: z.enum(STATUSES).default('available'),
  })
  .strict()

/** 400 with the failing fields, as the contract's validation errors list them. */
function invalid(response: Response, issues: z.ZodError['issues']): void {
  const details = issues.map((issue) => ({ field: issue.path.join('.'), message: issue.message }))
  response.status(400).json({ ...errorBody('invalid_request', 'The request is not valid.', 400), details })
}

collectDefaultMetrics()
const requests = new Counter({
  name: 'http_requests_total',
  help: 'Requests answered, by method, route and status.',
  labelNames: ['method', 'route', 'status_code'],
})
const duration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time to answer, by method, route and status.',
  labelNames: ['method', 'route', 'status_code'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
})

const app = express()
app.set('json replacer', bigintDigits)
app.use(
  pinoHttp({
    level: 'info',
    genReqId: (request, response) => {
      const id = request.headers['x-request-id'] ?? randomUUID()
      response.setHeader('x-request-id', id)
      return id
    },
  }),
)
app.use(cors({ origin: ['https://pets.example.com'] }))
app.use((request, response, next) => {
  const stop = duration.startTimer()
  response.on('finish', () => {
    const labels = {
      method: request.method,
      route: request.route ? `${request.baseUrl}${request.route.path}` : 'unmatched',
      status_code: response.statusCode,
    }
    requests.inc(labels)
    stop(labels)
  })
  next()
})
app.use(rateLimit({ windowMs: 60_000, limit: 10_000_000, standardHeaders: 'draft-8', legacyHeaders: false }))
app.get('/healthz', (_request, response) => {
  response.json({ status: 'ok' })
})
app.get('/metrics', async (_request, response) => {
  response.type(register.contentType).send(await register.metrics())
})

const v1 = express.Router()
v1.use((request, response, next) => {
  const given = request.headers.authorization
  if (given === AUTHORIZATION) return next()
  response
    .status(401)
    .set('www-authenticate', WWW_AUTHENTICATE)
    .json(given === undefined ? MISSING_KEY : INVALID_KEY)
})
v1.get('/pets', async (request, response) => {
  const parsed = ListQuery.safeParse(request.query)
  if (!parsed.success) return invalid(response, parsed.error.issues)
  const { limit, status, cursor } = parsed.data
  const page = await rows.list(cursor === undefined ? 0n : BigInt(cursor), status, limit + 1)
  if (page.length > limit) {
    page.length = limit
    const filter = status === undefined ? '' : `&status=${status}`
    response.set('link', `</v1/pets?limit=${limit}${filter}&cursor=${page[limit - 1]?.id}>; rel="next"`)
  }
  response.json(page)
})
v1.get('/pets/:id', async (request, response) => {
  response.set(DEPRECATION_HEADERS)
  const id = digits.safeParse(request.params.id)
  if (!id.success || !isInt64(BigInt(id.data))) return invalid(response, id.error?.issues ?? [])
  const found = await rows.find(BigInt(id.data))
  if (found === undefined) response.status(404).json(NOT_FOUND)
  else response.json(found)
})
v1.post('/pets', express.json({ limit: '16kb', reviver: exactIntegers }), async (request, response) => {
  const parsed = NewPet.safeParse(request.body)
  if (!parsed.success) return invalid(response, parsed.error.issues)
  const { name, categoryId, status } = parsed.data
  const created = await rows.insert(name, categoryId, status)
  response.status(201).location(`/v1/pets/${created.id}`).json(created)
})
app.use('/v1', v1)
app.use((error: Error & { status?: number }, _request: Request, response: Response, _next: NextFunction) => {
  const status = error.status !== undefined && error.status < 500 ? error.status : 500
  response.status(status).json(errorBody(status === 500 ? 'internal_error' : 'invalid_request', 'The request failed.', status))
})

const server = app.listen(0, '127.0.0.1', () => announceListening(NAME, server.address()))
