// Crash safety on both databases: every 201 survives kill -9 of the server mid-load, cycle after
// cycle (DURABILITY_CYCLES, default 20), int64 digits exact; the SQLite file passes integrity_check.
// After each restart every pet acknowledged so far is listed; at the end each is also read by id.
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import Database from 'better-sqlite3'
import { parse } from 'lossless-json'
import pg from 'pg'
import { describeEachDatabase, freshDatabase, type TestDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { parseJsonNumber } from '../../src/int64.js'
import { MAX_PAGE_LIMIT } from '../../src/schemas.js'
import { PET_MEMBERS } from '../../src/store/pet-columns.js'
import { assertBuilt, cliEnv, killLeftovers, type ServeProcess, startServe } from '../support/cli-process.js'

const KEY = 'durability-key_0123456789abcdefXYZ'
const CYCLES = Number(process.env.DURABILITY_CYCLES ?? 20)
const WORKERS = 8
/** Acknowledged creates per cycle before the kill. */
const ACKNOWLEDGED_BEFORE_KILL = 60
/** How long one cycle may take to reach ACKNOWLEDGED_BEFORE_KILL. */
const LOAD_TIMEOUT_MS = 15_000

/** A pet as text, field by field, exactly as the wire carried it. */
interface PetText {
  id: string
  name: string
  categoryId: string
  status: string
}

const STATUSES = ['available', 'pending', 'sold', undefined] as const

/** A distinct int64 for the n-th create, cycling through ranges a double cannot hold exactly. */
function categoryIdFor(n: number): bigint {
  const k = BigInt(n)
  switch (n % 5) {
    case 0:
      return 2n ** 53n + 1n + 2n * k
    case 1:
      return -(2n ** 53n) - 1n - 2n * k
    case 2:
      return 2n ** 63n - 1n - k
    case 3:
      return -(2n ** 63n) + k
    default:
      return 1_234_567_890_123_456_789n + k
  }
}

/** The text of each field of a Pet body, numbers as their exact digits. */
function petText(body: string): PetText {
  return petFields(parse(body, null, parseJsonNumber) as Record<string, unknown>, body)
}

/** The text of each field of a Pet parsed int64-exact (lossless-json), after its members are checked. */
function petFields(pet: Record<string, unknown>, body: string): PetText {
  assert.deepEqual(Object.keys(pet), PET_MEMBERS, body)
  return { id: String(pet.id), name: String(pet.name), categoryId: String(pet.categoryId), status: String(pet.status) }
}

/** Why a create got no response: the connection was refused (sent after the kill) or broke in flight. */
function failureKind(error: unknown): 'refused' | 'in-flight' {
  const cause = (error as { cause?: { code?: string } }).cause
  return cause?.code === 'ECONNREFUSED' ? 'refused' : 'in-flight'
}

interface CycleResult {
  acknowledged: PetText[]
  inFlightFailed: number
  refused: number
  elapsedMs: number
}

/**
 * Runs WORKERS loops of POST /v1/pets against `server`, SIGKILLs it (by PID) once
 * ACKNOWLEDGED_BEFORE_KILL creates got a 201, and lets every loop end on its first failed request.
 * `attempted` collects what was sent, by name. Any other outcome (a non-201, an error before the kill) fails.
 */
async function loadThenKill(
  server: ServeProcess,
  cycle: number,
  attempted: Map<string, Omit<PetText, 'id'>>,
): Promise<CycleResult> {
  const started = Date.now()
  const result: CycleResult = { acknowledged: [], inFlightFailed: 0, refused: 0, elapsedMs: 0 }
  let killed = false
  const kill = () => {
    if (!killed) {
      killed = true
      process.kill(server.pid, 'SIGKILL')
    }
  }
  const worker = async (w: number) => {
    for (let i = 0; ; i++) {
      if (!killed && Date.now() - started > LOAD_TIMEOUT_MS) {
        kill()
        throw new Error(`only ${result.acknowledged.length} creates acknowledged in ${LOAD_TIMEOUT_MS} ms`)
      }
      const n = (cycle * WORKERS + w) * 100_000 + i
      const name = `pet c${cycle} w${w} #${i}`
      const status = STATUSES[n % STATUSES.length]
      const categoryId = categoryIdFor(n).toString()
      const body = `{"name":${JSON.stringify(name)},"categoryId":${categoryId}${status ? `,"status":"${status}"` : ''}}`
      attempted.set(name, { name, categoryId, status: status ?? 'available' })
      let response: Response
      let text: string
      try {
        response = await fetch(`${server.origin}/v1/pets`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body,
        })
        text = await response.text()
      } catch (error) {
        if (!killed) throw error
        result[failureKind(error) === 'refused' ? 'refused' : 'inFlightFailed']++
        return
      }
      assert.equal(response.status, 201, text)
      const pet = petText(text)
      const { id, ...fields } = pet
      assert.match(id, /^[1-9]\d*$/)
      assert.deepEqual(fields, attempted.get(name), 'the 201 body echoes what was sent')
      result.acknowledged.push(pet)
      if (result.acknowledged.length >= ACKNOWLEDGED_BEFORE_KILL) kill()
    }
  }
  try {
    await Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)))
  } finally {
    kill()
  }
  assert.deepEqual(await server.exited, { code: null, signal: 'SIGKILL' })
  result.elapsedMs = Date.now() - started
  return result
}

/**
 * Lists every pet through GET /v1/pets (full pages, following Link rel="next") and asserts that each
 * of `expected` is there with each field's exact text: after each restart, the whole collection in a
 * few requests, where reading each pet by id would take one per pet (the last check does that).
 */
async function assertAllListed(server: ServeProcess, expected: PetText[]): Promise<void> {
  const listed = new Map<string, PetText>()
  for (let path: string | undefined = `/v1/pets?limit=${MAX_PAGE_LIMIT}`; path !== undefined; ) {
    const response = await fetch(`${server.origin}${path}`, { headers: { authorization: `Bearer ${KEY}` } })
    const text = await response.text()
    assert.equal(response.status, 200, text)
    for (const pet of parse(text, null, parseJsonNumber) as Array<Record<string, unknown>>) {
      const fields = petFields(pet, text)
      listed.set(fields.id, fields)
    }
    const link = response.headers.get('link')
    path = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1]
  }
  for (const pet of expected) {
    assert.deepEqual(listed.get(pet.id), pet, `acknowledged pet ${pet.id} (${pet.name}) is missing or changed`)
  }
}

/** Reads every pet in `expected` through GET /v1/pets/{id} and asserts each field's exact text. */
async function assertAllPresent(server: ServeProcess, expected: PetText[]): Promise<void> {
  const batch = 16
  for (let start = 0; start < expected.length; start += batch) {
    await Promise.all(
      expected.slice(start, start + batch).map(async (pet) => {
        const response = await fetch(`${server.origin}/v1/pets/${pet.id}`, { headers: { authorization: `Bearer ${KEY}` } })
        const text = await response.text()
        assert.equal(response.status, 200, `acknowledged pet ${pet.id} (${pet.name}) is missing: ${text}`)
        assert.deepEqual(petText(text), pet)
      }),
    )
  }
}

type Rows = Array<Record<string, bigint | string>>

/** Every pet row as stored, and the store's own soundness check: PRAGMA integrity_check on SQLite. */
async function inspect(database: TestDatabase, url: string): Promise<{ integrity: unknown; rows: Rows }> {
  if (database === 'sqlite') {
    const { journalMode, integrity, rows } = inspectSqlite(url.slice('sqlite:'.length))
    assert.equal(journalMode, 'wal')
    return { integrity, rows }
  }
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query(
      'select id::text as id, name, category_id::text as category_id, status from pets order by id',
    )
    return { integrity: 'ok', rows }
  } finally {
    await client.end()
  }
}

/** Opens the file read-only (beside the running server): its journal mode, PRAGMA integrity_check and every pet row. */
function inspectSqlite(path: string): { journalMode: unknown; integrity: unknown; rows: Rows } {
  const db = new Database(path, { readonly: true, fileMustExist: true })
  try {
    db.defaultSafeIntegers(true)
    return {
      journalMode: db.pragma('journal_mode', { simple: true }),
      integrity: db.pragma('integrity_check', { simple: true }),
      rows: db.prepare('select id, name, category_id, status from pets order by id').all() as Rows,
    }
  } finally {
    db.close()
  }
}

describeEachDatabase('durability under kill -9', (database) => {
  before(() => assertBuilt())
  after(() => killLeftovers())

  it(`keeps every acknowledged create across ${CYCLES} kill -9 cycles mid-load, with exact int64 values and a sound store`, async (t) => {
    const dir = tempDir()
    const store = await freshDatabase(database, dir.path)
    const env = cliEnv({ DATABASE_URL: store.url, API_KEYS: KEY, LOG_LEVEL: 'warn' })
    const acknowledged: PetText[] = []
    const attempted = new Map<string, Omit<PetText, 'id'>>()
    let server: ServeProcess | undefined
    try {
      for (let cycle = 1; cycle <= CYCLES; cycle++) {
        server = await startServe(env)
        await assertAllListed(server, acknowledged)
        assert.equal((await inspect(database, store.url)).integrity, 'ok', `integrity_check before cycle ${cycle}`)
        const result = await loadThenKill(server, cycle, attempted)
        t.diagnostic(
          `cycle ${cycle}: ${result.acknowledged.length} acknowledged, ${result.inFlightFailed} failed in flight, ` +
            `${result.refused} refused after the kill, in ${result.elapsedMs} ms`,
        )
        assert.ok(result.acknowledged.length >= ACKNOWLEDGED_BEFORE_KILL)
        assert.ok(result.inFlightFailed >= 1, 'the kill must land while requests are in flight')
        acknowledged.push(...result.acknowledged)
      }

      server = await startServe(env)
      await assertAllPresent(server, acknowledged)
      assert.equal(new Set(acknowledged.map((pet) => pet.id)).size, acknowledged.length, 'no id was acknowledged twice')

      const { integrity, rows } = await inspect(database, store.url)
      assert.equal(integrity, 'ok')
      assert.ok(rows.length >= acknowledged.length)
      for (const row of rows) {
        const sent = attempted.get(String(row.name))
        assert.ok(sent, `row ${row.id} holds a pet nobody sent: ${String(row.name)}`)
        assert.deepEqual({ name: String(row.name), categoryId: String(row.category_id), status: String(row.status) }, sent)
      }
      t.diagnostic(
        `total: ${acknowledged.length} acknowledged, all present; ${rows.length - acknowledged.length} unacknowledged creates also committed`,
      )
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server?.kill()
      await store.drop()
      dir.remove()
    }
  })
})
