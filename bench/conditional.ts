// A short measurement, apart from the load bench: the server CPU of 100 loads of /v1/openapi.json per
// content coding, and the share of 304s and the bytes saved when one client asks for the same page 100
// times with its ETag. Usage: `npm run build && npx tsx bench/conditional.ts [DIST_DIR]` (DIST_DIR: a
// build to measure, `dist` unless given, e.g. an older release's to compare). Results: docs/benchmarks.md.
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { cpuSeconds, startServer } from './processes.js'

const REPEATS = 100
const KEY = randomBytes(32).toString('base64url')

/** One GET over node:http (the body as sent, not decoded): status, ETag and body bytes. */
function get(
  origin: string,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; etag: string; bytes: number }> {
  return new Promise((done, fail) => {
    const req = request(`${origin}${path}`, { headers }, (response) => {
      let bytes = 0
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.length
      })
      response.on('end', () => done({ status: response.statusCode ?? 0, etag: String(response.headers.etag ?? ''), bytes }))
    })
    req.on('error', fail)
    req.end()
  })
}

async function main(): Promise<void> {
  const dist = resolve(process.argv[2] ?? 'dist')
  const env = { ...process.env, HOST: '127.0.0.1', PORT: '0', DATABASE_URL: 'sqlite::memory:', API_KEYS: KEY, LOG_LEVEL: 'warn' }
  const server = await startServer(
    'conditional',
    [process.execPath, join(dist, 'cli.js'), 'serve'],
    env,
    join(tmpdir(), 'bench-conditional.log'),
  )
  try {
    for (const coding of ['identity', 'gzip', 'br']) {
      await get(server.origin, '/v1/openapi.json', { 'accept-encoding': coding }) // warm-up (and the one-time compression)
      const before = cpuSeconds(server.pid)
      let bytes = 0
      for (let i = 0; i < REPEATS; i++)
        bytes += (await get(server.origin, '/v1/openapi.json', { 'accept-encoding': coding })).bytes
      const ms = ((cpuSeconds(server.pid) - before) * 1000) / REPEATS
      console.log(`openapi.json ${coding}: ${ms.toFixed(2)} ms CPU per load, ${bytes / REPEATS} B`)
    }
    const auth = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' }
    for (let i = 0; i < 100; i++) {
      await fetch(`${server.origin}/v1/pets`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ name: `pet ${i}`, categoryId: i }),
      })
    }
    for (const coding of ['identity', 'br']) {
      const headers = { authorization: auth.authorization, 'accept-encoding': coding }
      const first = await get(server.origin, '/v1/pets?limit=100', headers)
      let notModified = 0
      let bytes = 0
      for (let i = 0; i < REPEATS; i++) {
        const answer = await get(server.origin, '/v1/pets?limit=100', { ...headers, 'if-none-match': first.etag })
        if (answer.status === 304) notModified++
        bytes += answer.bytes
      }
      console.log(
        `page of 100, ${coding}: ${notModified}/${REPEATS} answered 304, ${bytes} body bytes instead of ${first.bytes * REPEATS}`,
      )
    }
  } finally {
    await server.stop()
  }
}

await main()
