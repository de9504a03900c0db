// The bench's floor (`bare`): node:http answering each bench request with a body of the service's shape, doing none of
// its work (no database, canned pages). Its 401 keeps the connection, as the service's does when no body is unread.
// `node bare.js`; prints `bare listening on http://127.0.0.1:PORT`.
import { createServer } from 'node:http'
import {
  AUTHORIZATION,
  announceListening,
  INVALID_KEY,
  JSON_TYPE,
  MISSING_KEY,
  NOT_FOUND,
  STATUSES,
  WWW_AUTHENTICATE,
} from './contract.js'

const MISSING = JSON.stringify(MISSING_KEY)
const INVALID = JSON.stringify(INVALID_KEY)
const ABSENT = JSON.stringify(NOT_FOUND)
const CHALLENGE = { 'www-authenticate': WWW_AUTHENTICATE }

// A seeded pet's JSON (bench/databases.ts: name `pet-ID`, category `ID % 1000 + 1`).
const pet = (id: number, status: string) => `{"id":${id},"name":"pet-${id}","categoryId":${(id % 1000) + 1},"status":"${status}"}`
const pages = new Map<string, string>()
let nextId = 100_000

const server = createServer((request, response) => {
  const url = request.url ?? ''
  const [path = '', query = ''] = url.split('?')
  const send = (status: number, body: string, headers: Record<string, string> = {}) =>
    response.writeHead(status, { ...headers, 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) }).end(body)
  if (path === '/healthz') return send(200, '{"status":"ok"}')
  const given = request.headers.authorization
  if (given !== AUTHORIZATION) return send(401, given === undefined ? MISSING : INVALID, CHALLENGE)
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
  return id ? send(200, pet(Number(id), 'available')) : send(404, ABSENT)
})
server.listen(0, '127.0.0.1', () => announceListening('bare', server.address()))
