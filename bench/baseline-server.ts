// The bench baseline: a bare node:http server answering the service's routes with JSON bodies of the same bytes.
// Run by bench/run.ts as plain JavaScript in its own process; prints `baseline listening on http://HOST:PORT/v1`.
// Environment: BASELINE_AUTHORIZATION (the exact Authorization header to accept), BASELINE_NEW_PET (the NewPet
// JSON the bench posts; pets are `{id, ...newPet}`, as the service writes them), BASELINE_LIST_SIZE (default 20).
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

const authorization = process.env.BASELINE_AUTHORIZATION ?? ''
const newPet = JSON.parse(process.env.BASELINE_NEW_PET ?? '{}') as Record<string, unknown>
const listSize = Number(process.env.BASELINE_LIST_SIZE ?? 20)

const pet = (id: number) => JSON.stringify({ id, ...newPet })
const LIST = `[${Array.from({ length: listSize }, (_, index) => pet(index + 1)).join(',')}]`
const UNAUTHORIZED = JSON.stringify({
  code: 'missing_api_key',
  message: 'An API key is required: send "Authorization: Bearer <API_KEY>".',
  status: 401,
})
const NOT_FOUND = JSON.stringify({ code: 'not_found', message: 'There is no resource at this path.', status: 404 })
const HEALTHY = JSON.stringify({ status: 'ok' })
// createPet ids: five digits, like the service's after seeding and a few rounds.
let nextId = 10_000

function send(response: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  })
  response.end(body)
}

const server = createServer((request, response) => {
  const path = request.url?.split('?', 1)[0] ?? ''
  if (path === '/healthz') return send(response, 200, HEALTHY)
  if (request.headers.authorization !== authorization) {
    return send(response, 401, UNAUTHORIZED, { 'www-authenticate': 'Bearer realm="animal-store"' })
  }
  if (path === '/v1/pets' && request.method === 'GET') return send(response, 200, LIST)
  if (path === '/v1/pets' && request.method === 'POST') {
    // Drain the body (not parsed: this is the floor), then answer as createPet does.
    request.resume()
    request.on('end', () => {
      const id = nextId++
      send(response, 201, pet(id), { location: `/v1/pets/${id}` })
    })
    return
  }
  const getPet = /^\/v1\/pets\/(\d+)$/.exec(path)
  if (getPet && request.method === 'GET') return send(response, 200, pet(Number(getPet[1])))
  send(response, 404, NOT_FOUND)
})

server.listen(0, '127.0.0.1', () => {
  const { address, port } = server.address() as AddressInfo
  process.stdout.write(`baseline listening on http://${address}:${port}/v1\n`)
})
