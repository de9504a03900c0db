// Property-based fuzzing of every operation over real HTTP on SQLite and PostgreSQL (fast-check, fixed seed; FUZZ_RUNS=n runs n× more, FUZZ_SEED=s another seed), each answer checked against the README rules.
// Generators are in fuzz-arbitraries.ts, the harness in fuzz-checks.ts, the model in fuzz-model.ts. The
// properties share one server per database, in this order: each one's pets are known to the next.
import assert from 'node:assert/strict'
import { after as afterAll, before, it } from 'node:test'
import fc from 'fast-check'
import { describeEachDatabase, startServer, type TestServer, toJson } from '../../scripts/lib/test-server.js'
import {
  authCase,
  bodySizeCase,
  contentTypeArb,
  ENCODINGS,
  encodeQueryPart,
  fillKey,
  hostileBody,
  LATIN1,
  methodCase,
  newPet,
  pathSpelling,
  percentEncode,
  type QueryValue,
  queryArb,
  rawCase,
  rawRequest,
  renderNewPet,
  segmentCase,
  utf8,
} from './fuzz-arbitraries.js'
import { assertCreated, assertDeprecated, assertOutcome, Fuzzer, JSON_TYPE, property } from './fuzz-checks.js'
import { exactPet, parseExact, type Seen, toExactPet } from './fuzz-http.js'
import {
  asServerSees,
  authVerdict,
  BODY_LIMIT,
  bodyVerdict,
  cursorFor,
  cursorId,
  type Expected,
  isJsonContentType,
  isValidName,
  listVerdict,
  petIdVerdict,
  STATUSES,
  UNUSED_ID,
} from './fuzz-model.js'

// ================================================================ the properties

describeEachDatabase('fuzz: generated requests over real HTTP', (database) => {
  let server: TestServer
  let f: Fuzzer
  let cursorKey: Buffer
  before(async () => {
    server = await startServer({ database })
    cursorKey = await server.store.loadCursorKey()
    f = new Fuzzer(server)
    for (let k = 0; k < 25; k++) {
      const body = utf8(toJson({ name: `seed ${k}`, categoryId: BigInt(k) * 7919n - 50n, status: STATUSES[k % 3] }))
      const seen = await f.send({ method: 'POST', path: '/v1/pets', headers: f.withKey(JSON_TYPE), body })
      assert.equal(seen.status, 201)
    }
  })
  afterAll(async () => {
    f.client.close()
    await server.close()
  })

  it('POST /v1/pets answers every valid NewPet 201 with the same Pet (exact int64, byte-exact name), and GET /v1/pets/{id} reads it back', async (t) => {
    await property(t, f, 80, fc.tuple(newPet, fc.boolean()), async ([pet, chunked]) => {
      assert.ok(isValidName(pet.name), 'the generator makes valid names')
      const body = renderNewPet(pet)
      const what = `createPet ${body.toString('utf8').slice(0, 200)}`
      const seen = await f.send({ method: 'POST', path: '/v1/pets', headers: f.withKey(JSON_TYPE), body, chunked })
      await assertCreated(f, seen, { name: pet.name, categoryId: pet.categoryId, status: pet.status ?? 'available' }, what)
    })
  })

  it('POST /v1/pets answers any other body with the 4xx the README rules give (invalid_json, invalid_request naming each field, 413), never a 5xx or a 201', async (t) => {
    await property(
      t,
      f,
      300,
      fc.tuple(hostileBody, fc.oneof({ weight: 4, arbitrary: fc.constant(false) }, fc.constant(true))),
      async ([body, chunked]) => {
        const seen = await f.send({ method: 'POST', path: '/v1/pets', headers: f.withKey(JSON_TYPE), body, chunked })
        await assertOutcome(
          f,
          seen,
          bodyVerdict(body),
          'body',
          `createPet ${JSON.stringify(body.toString('latin1').slice(0, 300))}`,
        )
      },
    )
  })

  it('POST /v1/pets reads a body of up to 16384 bytes and answers 413 body_too_large above, with Content-Length or chunked', async (t) => {
    await property(t, f, 30, bodySizeCase, async ({ pet, size, pad, before, chunked }) => {
      const json = renderNewPet(pet)
      const padding = utf8(pad.repeat(Math.max(0, size - json.length)).slice(0, Math.max(0, size - json.length)))
      const body = before ? Buffer.concat([padding, json]) : Buffer.concat([json, padding])
      const seen = await f.send({ method: 'POST', path: '/v1/pets', headers: f.withKey(JSON_TYPE), body, chunked })
      const expected = bodyVerdict(body)
      assert.equal(expected.status, body.length > BODY_LIMIT ? 413 : 201, 'model')
      await assertOutcome(f, seen, expected, 'body', `createPet of ${body.length} bytes${chunked ? ' chunked' : ''}`)
    })
  })

  it('POST /v1/pets reads the body only as application/json in UTF-8 (any case, parameters ignored) and answers 415 otherwise', async (t) => {
    await property(t, f, 100, fc.tuple(contentTypeArb, newPet), async ([ct, pet]) => {
      const header = ct.absent ? undefined : `${ct.lead}${[ct.media, ...ct.params].join(ct.separator)}`
      const body = renderNewPet(pet)
      const headers = f.withKey(header === undefined ? {} : { 'content-type': header })
      const seen = await f.send({ method: 'POST', path: '/v1/pets', headers, body })
      const what = `createPet with Content-Type ${JSON.stringify(header)}`
      if (isJsonContentType(header === undefined ? undefined : header.trim())) {
        await assertCreated(f, seen, { name: pet.name, categoryId: pet.categoryId, status: pet.status ?? 'available' }, what)
      } else {
        await assertOutcome(f, seen, { status: 415, codes: ['unsupported_media_type'] }, 'body', what)
      }
    })
  })

  it('GET /v1/pets answers a valid query 200 with at most limit pets in id order after the cursor, and any other query 400 naming each bad parameter', async (t) => {
    await property(t, f, 200, queryArb, async ({ params, separator, questionMark }) => {
      const resolve = (value: QueryValue): string =>
        typeof value === 'string'
          ? value
          : 'knownIndex' in value
            ? cursorFor(f.knownId(value.knownIndex), cursorKey)
            : cursorFor(value.randomId, cursorKey)
      const query = params
        .map(({ pair: [name, value], nameEncoding, valueEncoding, upper, withoutEquals, malformed }) => {
          const encodedName = encodeQueryPart(name, nameEncoding, upper)
          const encodedValue = encodeQueryPart(resolve(value), valueEncoding, upper) + (malformed ?? '')
          return withoutEquals && encodedValue === '' ? encodedName : `${encodedName}=${encodedValue}`
        })
        .join(separator)
      const path = query === '' && !questionMark ? '/v1/pets' : `/v1/pets?${query}`
      const seen = await f.send({ method: 'GET', path, headers: f.withKey() })
      const what = `GET ${path}`
      const verdict = listVerdict(query, cursorKey)
      if (!verdict.ok)
        return assertOutcome(f, seen, { status: 400, codes: ['invalid_request'], fields: verdict.fields }, 'query', what)
      assert.equal(seen.status, 200, `${what}: 200 expected, got ${seen.status} ${seen.text.slice(0, 300)}`)
      const matching = [...f.known.values()]
        .sort((a, b) => (a.id < b.id ? -1 : 1))
        .filter(
          (pet) =>
            (verdict.status === undefined || pet.status === verdict.status) &&
            (verdict.after === undefined || pet.id > verdict.after),
        )
      const page = matching.slice(0, verdict.limit)
      const got = parseExact(seen.text) as unknown[]
      assert.deepEqual(
        got.map((pet) => toExactPet(pet, seen.text)),
        page,
        `${what}: the page`,
      )
      const link = seen.headers.get('link')
      if (matching.length <= verdict.limit) return assert.equal(link, null, `${what}: no next link on the last page`)
      const target = /^<([^>]+)>; rel="next"$/.exec(link ?? '')?.[1]
      assert.ok(target, `${what}: a next link, got ${link}`)
      const next = new URL(target, 'http://host')
      assert.equal(next.pathname, '/v1/pets', `${what}: next link path`)
      assert.equal(next.searchParams.get('limit'), String(verdict.limit), `${what}: next link limit`)
      assert.equal(next.searchParams.get('status'), verdict.status ?? null, `${what}: next link status`)
      assert.equal(cursorId(next.searchParams.get('cursor') ?? '', cursorKey), page.at(-1)?.id, `${what}: next link cursor`)
    })
  })

  it('GET /v1/pets/{petId} answers a plain int64 200 or 404 pet_not_found, anything else 400 naming petId, always with Deprecation, Sunset and Link (a path that cannot be decoded: plain 400)', async (t) => {
    await property(t, f, 200, segmentCase, async ({ segment, encoding, upper, malformed }) => {
      const text =
        'text' in segment ? segment.text : String('knownIndex' in segment ? f.knownId(segment.knownIndex) : segment.randomId)
      const sent = percentEncode(text, ENCODINGS[encoding], upper) + (malformed ?? '')
      const path = `/v1/pets/${sent}`
      const seen = await f.send({ method: 'GET', path, headers: f.withKey() })
      const what = `GET ${path}`
      if (malformed !== undefined) {
        // a path that cannot be percent-decoded is routed to no operation: a plain 400
        assert.equal(seen.status, 400, `${what}: ${seen.text}`)
        assert.equal(JSON.parse(seen.text).code, 'invalid_request', what)
        return
      }
      assertDeprecated(seen, what)
      const expected = petIdVerdict(sent, f.known)
      if (expected.status !== 200) return assertOutcome(f, seen, expected, 'path', what)
      assert.equal(seen.status, 200, `${what}: 200 expected, got ${seen.status} ${seen.text.slice(0, 300)}`)
      assert.deepEqual(exactPet(seen.text), f.known.get(expected.id as bigint), `${what}: the stored Pet`)
    })
  })

  it('every operation answers a missing or malformed Authorization 401 (missing_api_key or invalid_api_key) before anything else, and accepts the key as RFC 6750 writes it', async (t) => {
    await property(t, f, 150, authCase, async ({ values, target }) => {
      const sent = values.map((value) => fillKey(value, f.key))
      const known = f.knownId(0)
      const [method, path, ok, body]: [string, string, number, Buffer | undefined] = {
        list: ['GET', '/v1/pets?limit=1', 200, undefined],
        create: ['POST', '/v1/pets', 201, utf8('{"name":"auth","categoryId":1}')],
        'get-known': ['GET', `/v1/pets/${known}`, 200, undefined],
        'get-unused': ['GET', `/v1/pets/${UNUSED_ID}`, 404, undefined],
        nothing: ['GET', '/v1/nothing', 404, undefined],
        delete: ['DELETE', '/v1/pets', 405, undefined],
        head: ['HEAD', '/v1/pets', 200, undefined],
        'create-bad-json': ['POST', '/v1/pets', 400, utf8('{"name":')],
      }[target] as [string, string, number, Buffer | undefined]
      const what = `${method} ${path} with Authorization ${JSON.stringify(sent)}`
      let seen: Seen
      if (sent.every((value) => LATIN1.test(value))) {
        const headers = {
          ...(sent.length > 0 && { authorization: sent.length === 1 ? (sent[0] as string) : sent }),
          ...(body && JSON_TYPE),
        }
        seen = await f.send({ method, path, headers, body })
      } else {
        const headers: Array<[string, string]> = [
          ...sent.map((value): [string, string] => ['Authorization', value]),
          ...(body ? [['Content-Type', 'application/json'] as [string, string]] : []),
        ]
        seen = (await f.raw(rawRequest(method, path, headers, body), method, path, method === 'HEAD'))[0] as Seen
      }
      if (path.startsWith('/v1/pets/')) assertDeprecated(seen, what)
      const verdict = authVerdict(
        sent.map((value) => (LATIN1.test(value) ? value : asServerSees(value))),
        f.key,
      )
      if (verdict !== 'ok') {
        assert.equal(seen.status, 401, `${what}: 401 expected, got ${seen.status} ${seen.text.slice(0, 200)}`)
        if (method !== 'HEAD')
          assert.ok(verdict.includes(JSON.parse(seen.text).code), `${what}: code ${seen.text}, expected ${verdict}`)
        if (!verdict.includes('missing_api_key'))
          assert.match(seen.headers.get('www-authenticate') ?? '', /error="invalid_token"/, what)
        return
      }
      assert.equal(seen.status, ok, `${what}: ${ok} expected, got ${seen.status} ${seen.text.slice(0, 200)}`)
    })
  })

  it('every operation needs the key however its path is spelled: percent-encoded unreserved characters or the absolute form (RFC 3986 §6.2.2.2, RFC 9112 §3.2.2)', async (t) => {
    await property(t, f, 100, pathSpelling, async ({ target, encode, upper, absolute, key }) => {
      const id = f.knownId(encode.filter(Boolean).length)
      const [method, canonical, query, ok]: [string, string, string, number] = {
        list: ['GET', '/v1/pets', '?limit=1', 200],
        create: ['POST', '/v1/pets', '', 201],
        get: ['GET', `/v1/pets/${id}`, '', 200],
        nothing: ['GET', '/v1/nothing', '', 404],
      }[target] as [string, string, string, number]
      const spelled = [...canonical]
        .map((c, k) =>
          encode[k % encode.length] && /[A-Za-z0-9]/.test(c)
            ? `%${c.charCodeAt(0).toString(16)[upper ? 'toUpperCase' : 'toLowerCase']()}`
            : c,
        )
        .join('')
      const path = `${absolute ?? ''}${spelled}${query}`
      const headers: Record<string, string> = {
        ...(key === 'valid' && { authorization: `Bearer ${f.key}` }),
        ...(key === 'wrong' && { authorization: `Bearer ask_${'A'.repeat(43)}` }),
        ...(method === 'POST' && JSON_TYPE),
      }
      const body = method === 'POST' ? utf8('{"name":"spelled","categoryId":1}') : undefined
      const seen = await f.send({ method, path, headers, body }, canonical + query)
      const what = `${method} ${path} (${key} key)`
      if (key !== 'valid') {
        assert.equal(seen.status, 401, `${what}: served without a valid key: ${seen.status} ${seen.text.slice(0, 200)}`)
        assert.equal(JSON.parse(seen.text).code, key === 'none' ? 'missing_api_key' : 'invalid_api_key', what)
      } else assert.equal(seen.status, ok, `${what}: as ${canonical}${query}: ${seen.status} ${seen.text.slice(0, 200)}`)
    })
  })

  it('any other method on /v1/pets or /v1/pets/{petId} is 405 with Allow, other paths under /v1 are 404 not_found, and all of them 401 without a valid key', async (t) => {
    await property(t, f, 120, methodCase, async ({ method, path: template, key, body }) => {
      const path = template.replace('KNOWN', String(f.knownId(0)))
      const headers: Record<string, string> = {
        ...(key === 'valid' && { authorization: `Bearer ${f.key}` }),
        ...(key === 'wrong' && { authorization: 'Bearer wrong-key-0123456789' }),
        ...(body === 'json' && JSON_TYPE),
        ...(body === 'text' && { 'content-type': 'text/plain' }),
      }
      const payload = body === 'json' ? utf8('{"name":"method","categoryId":2}') : body === 'text' ? utf8('hello') : undefined
      const seen = await f.send({ method, path, headers, body: payload })
      const what = `${method} ${path} (${key} key, ${body} body)`
      if (key !== 'valid') {
        assert.equal(seen.status, 401, `${what}: 401 expected, got ${seen.status} ${seen.text.slice(0, 200)}`)
        return
      }
      const readOnly = method === 'GET' || method === 'HEAD'
      let expected: Expected & { allow?: string }
      if (path === '/v1/pets') {
        if (readOnly) expected = { status: 200, codes: [] }
        else if (method !== 'POST') expected = { status: 405, codes: ['method_not_allowed'], allow: 'GET, HEAD, POST' }
        else if (body === 'json') expected = { status: 201, codes: [] }
        else if (body === 'text') expected = { status: 415, codes: ['unsupported_media_type'] }
        else expected = { status: 400, codes: ['invalid_request'] }
      } else if (/^\/v1\/pets\/[^/]+$/.test(path)) {
        if (readOnly) {
          const verdict = petIdVerdict(path.slice('/v1/pets/'.length), f.known)
          expected = { status: verdict.status, codes: verdict.codes }
        } else expected = { status: 405, codes: ['method_not_allowed'], allow: 'GET, HEAD' }
        if (readOnly) assertDeprecated(seen, what)
      } else expected = { status: 404, codes: ['not_found'] }
      assert.equal(
        seen.status,
        expected.status,
        `${what}: ${expected.status} expected, got ${seen.status} ${seen.text.slice(0, 200)}`,
      )
      if (method !== 'HEAD' && seen.status >= 400)
        assert.ok(expected.codes.includes(JSON.parse(seen.text).code), `${what}: ${seen.text}`)
      if (expected.allow) assert.equal(seen.headers.get('allow'), expected.allow, `${what}: Allow`)
    })
  })

  it('malformed HTTP on a raw socket (request line, header bytes, framing, Expect) is answered with a catalog Error, never a 5xx, and nothing is served without the key', async (t) => {
    await property(t, f, 150, rawCase, async (c) => {
      const body = {
        valid: utf8('{"name":"raw","categoryId":3}'),
        garbage: utf8('{"name":'),
        empty: Buffer.alloc(0),
        big: utf8(`"${'x'.repeat(17000)}"`),
      }[c.body]
      const lines: string[] = [`${c.method} ${c.target} ${c.version}`.trimEnd()]
      if (c.host !== 'absent') lines.push(`Host: ${c.host === 'empty' ? '' : '127.0.0.1'}`)
      if (c.host === 'twice') lines.push('Host: other')
      const auth = {
        valid: [`Bearer ${f.key}`],
        none: [],
        wrong: ['Bearer wrong-key-0123456789'],
        utf8: [`Bearer ${f.key}é`],
        control: [`Bearer ${f.key}\u0001`],
        twice: [`Bearer ${f.key}`, `Bearer ${f.key}`],
        'lower-scheme': [`bearer ${f.key}`],
      }[c.auth] as string[]
      for (const value of auth) lines.push(`Authorization: ${value}`)
      const type = {
        json: 'application/json',
        none: undefined,
        text: 'text/plain',
        utf16: 'application/json; charset=utf-16',
        control: 'application/json\u0001',
      }[c.contentType]
      if (type) lines.push(`Content-Type: ${type}`)
      let payload = body
      switch (c.framing) {
        case 'length':
          lines.push(`Content-Length: ${body.length}`)
          break
        case 'length-short':
          lines.push(`Content-Length: ${Math.max(0, body.length - 3)}`)
          break
        case 'length-twice':
          lines.push(`Content-Length: ${body.length}`, `Content-Length: ${body.length + 1}`)
          break
        case 'length-negative':
          lines.push('Content-Length: -1')
          break
        case 'length-junk':
          lines.push(`Content-Length: ${body.length}x`)
          break
        case 'chunked':
        case 'chunked+length':
          lines.push('Transfer-Encoding: chunked')
          if (c.framing === 'chunked+length') lines.push(`Content-Length: ${body.length}`)
          payload =
            body.length === 0
              ? utf8('0\r\n\r\n')
              : Buffer.concat([utf8(`${body.length.toString(16)}\r\n`), body, utf8('\r\n0\r\n\r\n')])
          break
        case 'chunked-bad':
          lines.push('Transfer-Encoding: chunked')
          payload = Buffer.concat([utf8('zz\r\n'), body, utf8('\r\n0\r\n\r\n')])
          break
        case 'te-gzip':
          lines.push('Transfer-Encoding: gzip')
          break
        default:
          payload = Buffer.alloc(0)
      }
      lines.push(...c.extra.map((line) => line.replace('<17000 × a>', 'a'.repeat(17000))), 'Connection: close')
      const bytes = Buffer.concat([utf8(lines.join(c.eol) + c.eol + c.eol), payload])
      const canonical = c.target === 'http://x/v1/pets' || c.target === '/%76%31/pets' ? '/v1/pets' : c.target
      const responses = await f.raw(bytes, c.method, canonical)
      const keyed = c.auth === 'valid' || c.auth === 'twice' || c.auth === 'lower-scheme'
      if (!keyed) {
        for (const seen of responses)
          assert.ok(
            seen.status >= 400,
            `served without a valid key: ${seen.status} ${seen.text.slice(0, 200)} for ${JSON.stringify(bytes.toString('latin1').slice(0, 300))}`,
          )
      }
    })
  })
})
