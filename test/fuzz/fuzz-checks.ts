// The fuzz suites' harness: the Fuzzer that sends requests and checks every answer, the outcome assertions, and property(), which runs one property with the fixed seed and FUZZ_RUNS.
import assert from 'node:assert/strict'
import { Buffer } from 'node:buffer'
import type { TestContext } from 'node:test'
import fc from 'fast-check'
import type { TestServer } from '../../scripts/lib/test-server.js'
import { ERROR_BODY_LIMITS } from '../../src/http/errors.js'
import { assertWellFormed, type ExactPet, exactPet, HttpClient, type Outgoing, rawExchange, type Seen } from './fuzz-http.js'
import { type Expected, UNUSED_ID } from './fuzz-model.js'

const SEED = Number(process.env.FUZZ_SEED) || 20261122
const SCALE = Math.max(1, Number(process.env.FUZZ_RUNS) || 1)
/** The CI run count of a property, times FUZZ_RUNS. */
const runs = (base: number) => Math.ceil(base * SCALE)

/** The Content-Type of a JSON body. */
export const JSON_TYPE = { 'content-type': 'application/json' }
const DEPRECATION = {
  deprecation: '@1795132800',
  sunset: 'Thu, 05 Dec 2030 00:00:00 GMT',
  link: '</v1/pets>; rel="successor-version"',
}

// ================================================================ the client that checks every answer

/** One server under fuzz: sends requests, checks every answer, and keeps every pet a 201 created. */
export class Fuzzer {
  requests = 0
  readonly known = new Map<bigint, ExactPet>()
  readonly client: HttpClient

  constructor(readonly server: TestServer) {
    this.client = new HttpClient(server.origin)
  }

  get key(): string {
    return this.server.key
  }

  withKey(headers: Record<string, string | string[]> = {}): Record<string, string | string[]> {
    return { authorization: `Bearer ${this.server.key}`, ...headers }
  }

  /** Sends one request over node:http and checks what every answer must satisfy. */
  async send(out: Outgoing, contractPath = out.path): Promise<Seen> {
    this.requests++
    const what = describeRequest(out)
    const seen = await this.client.send(out).catch((error: Error) => assert.fail(`${what}: no answer: ${error.message}`))
    this.observe(out.method, contractPath, seen, what)
    return seen
  }

  /** Sends raw bytes on a fresh connection; checks every answer; fails when none comes within 5 s. */
  async raw(bytes: Buffer, method: string, contractPath: string, bodiless = false): Promise<Seen[]> {
    this.requests++
    const what = `raw ${JSON.stringify(bytes.toString('latin1').slice(0, 300))}`
    const result = await rawExchange(this.client.port, bytes, { bodiless })
    assert.ok(!result.timedOut, `${what}: no answer within 5 s`)
    assert.ok(result.responses.length > 0, `${what}: the connection closed without an answer`)
    for (const [k, seen] of result.responses.entries())
      this.observe(k === 0 ? method : 'GET', k === 0 ? contractPath : '/', seen, what)
    return result.responses
  }

  private observe(method: string, contractPath: string, seen: Seen, what: string): void {
    assertWellFormed(method, contractPath, seen, what)
    if (seen.status === 201 && method.toUpperCase() === 'POST') {
      const pet = exactPet(seen.text)
      assert.ok(!this.known.has(pet.id), `${what}: a 201 with an id already assigned (${pet.id})`)
      this.known.set(pet.id, pet)
    }
  }

  /** A known pet's id chosen by `index`, or UNUSED_ID while there is none. */
  knownId(index: number): bigint {
    const ids = [...this.known.keys()]
    return ids.length === 0 ? UNUSED_ID : (ids[index % ids.length] as bigint)
  }
}

function describeRequest(out: Outgoing): string {
  const body =
    out.body === undefined ? '' : ` body(${Buffer.byteLength(out.body)} bytes)=${JSON.stringify(String(out.body).slice(0, 200))}`
  return `${out.method} ${out.path.slice(0, 200)} ${JSON.stringify(out.headers ?? {}).slice(0, 300)}${out.chunked ? ' chunked' : ''}${body}`
}

/** Asserts a 201 carries exactly `expected` (int64 digits and name exact), its Location, and reads back the same. */
export async function assertCreated(f: Fuzzer, seen: Seen, expected: NonNullable<Expected['pet']>, what: string): Promise<void> {
  assert.equal(seen.status, 201, `${what}: 201 expected, got ${seen.status} ${seen.text.slice(0, 300)}`)
  const pet = exactPet(seen.text)
  assert.deepEqual({ name: pet.name, categoryId: pet.categoryId, status: pet.status }, expected, `${what}: the echoed Pet`)
  assert.match(seen.text, new RegExp(`"categoryId":${expected.categoryId}[,}]`), `${what}: exact categoryId digits`)
  assert.equal(seen.headers.get('location'), `/v1/pets/${pet.id}`, `${what}: Location`)
  const read = await f.send({ method: 'GET', path: `/v1/pets/${pet.id}`, headers: f.withKey() })
  assert.equal(read.status, 200, `${what}: GET /v1/pets/${pet.id} after the 201`)
  assert.deepEqual(exactPet(read.text), pet, `${what}: getPet reads back the created Pet`)
}

/** Asserts the answer is the expected one: the 201 and its Pet, or the error status, code and failing fields. */
export async function assertOutcome(f: Fuzzer, seen: Seen, expected: Expected, part: 'body' | 'query' | 'path', what: string) {
  if (expected.pet) return assertCreated(f, seen, expected.pet, what)
  assert.equal(
    seen.status,
    expected.status,
    `${what}: expected ${expected.status} ${expected.codes}, got ${seen.status} ${seen.text.slice(0, 300)}`,
  )
  if (seen.status < 400 || !seen.text) return
  const body = JSON.parse(seen.text)
  assert.ok(expected.codes.includes(body.code), `${what}: code ${body.code}, expected one of ${expected.codes}`)
  if (expected.fields && body.code === 'invalid_request') {
    for (const detail of body.details ?? []) assert.equal(detail.in, part, `${what}: details[].in`)
    const fields = [...new Set((body.details ?? []).map((detail: { field: string }) => detail.field))].sort()
    // The Error body cuts a field name to its first ERROR_BODY_LIMITS.field characters (code points).
    const cut = (field: string) => Array.from(field).slice(0, ERROR_BODY_LIMITS.field).join('')
    const named = [...new Set([...expected.fields].map(cut))].sort()
    assert.deepEqual(fields, named, `${what}: details name each failing ${part} field`)
  }
}

/** Asserts the three deprecation headers of getPet (docs/specification.md, Deprecation). */
export function assertDeprecated(seen: Seen, what: string): void {
  for (const [name, value] of Object.entries(DEPRECATION)) assert.equal(seen.headers.get(name), value, `${what}: ${name} header`)
}

/** Runs one property with the fixed seed and reports how many requests it sent. */
export async function property<T>(
  t: TestContext,
  f: Fuzzer,
  base: number,
  arbitrary: fc.Arbitrary<T>,
  predicate: (value: T) => Promise<void>,
) {
  const numRuns = runs(base)
  const start = f.requests
  try {
    await fc.assert(fc.asyncProperty(arbitrary, predicate), { seed: SEED, numRuns, includeErrorInReport: true })
  } finally {
    t.diagnostic(`${f.requests - start} requests in ${numRuns} runs (seed ${SEED})`)
  }
}
