// The bench baseline: a bare node:http server answering the service's routes with JSON bodies shaped like its own.
// Run by bench/run.ts as plain JavaScript in its own process; prints `baseline listening on http://HOST:PORT/v1`.
// Environment: BASELINE_AUTHORIZATION (the exact Authorization header to accept), BASELINE_NEW_PET (the NewPet
// JSON the bench posts; created pets are `{id, ...newPet}`, as the service writes them).
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

const authorization = process.env.BASELINE_AUTHORIZATION ?? ''
const newPet = JSON.parse(process.env.BASELINE_NEW_PET ?? '{}') as Record<string, unknown>
const STATUSES = ['available', 'pending', 'sold']

/** A stored pet as the bench seeds them (bench/seed.ts): name `pet-ID`, category `ID % 1000 + 1`. */
const pet = (id: number, status: string) => JSON.stringify({ id, name: `pet-${id}`, categoryId: (id % 1000) + 1, status })
/** Canned list bodies by `limit|status`: the floor does no work per request beyond a map lookup. */
const lists = new Map<string, string>()
function list(limit: number, status: string | null): string {
  const key = `${limit}|${status}`
  let body = lists.get(key)
  if (body === undefined) {
    body = `[${Array.from({ length: limit }, (_, index) => pet(index + 1, status ?? (STATUSES[index % 3] as string))).join(',')}]`
    lists.set(key, body)
  }
  return body
}
const UNAUTHORIZED = JSON.stringify({
  code: 'missing_api_key',
  message: 'An API key is required: send "Authorization: Bearer <API_KEY>".',
  status: 401,
})
const NOT_FOUND = JSON.stringify({ code: 'not_found', message: 'There is no resource at this path.', status: 404 })
const HEALTHY = JSON.stringify({ status: 'ok' })
// createPet ids: six digits, like the service's after seeding and a few rounds.
let nextId = 100_000

function send(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  })
  response.end(body)
}

const server = createServer((request, response) => {
  const url = request.url ?? ''
  const queryAt = url.indexOf('?')
  const path = queryAt === -1 ? url : url.slice(0, queryAt)
  if (path === '/healthz') return send(response, 200, HEALTHY)
  if (request.headers.authorization !== authorization) {
    return send(response, 401, UNAUTHORIZED, { 'www-authenticate': 'Bearer realm="animal-store"' })
  }
  if (path === '/v1/pets' && request.method === 'GET') {
    // The query is read (limit, status) but not validated, and the cursor is ignored: this is the floor.
    const query = new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1))
    const limit = Math.min(100, Math.max(1, Number(query.get('limit') ?? 20) || 20))
    return send(response, 200, list(limit, query.get('status')))
  }
  if (path === '/v1/pets' && request.method === 'POST') {
    // Drain the body (not parsed), then answer as createPet does.
    request.resume()
    request.on('end', () => {
      const id = nextId++
      send(response, 201, JSON.stringify({ id, ...newPet }), { location: `/v1/pets/${id}` })
    })
    return
  }
  const getPet = /^\/v1\/pets\/(\d+)$/.exec(path)
  if (getPet && request.method === 'GET') return send(response, 200, pet(Number(getPet[1]), 'available'))
  send(response, 404, NOT_FOUND)
})

server.listen(0, '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo
  process.stdout.write(`baseline listening on http://${address}:${port}/v1\n`)
})
