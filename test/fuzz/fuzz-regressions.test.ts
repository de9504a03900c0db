// The shrunk counterexamples test/fuzz/fuzz.test.ts found, kept as plain example tests on SQLite and PostgreSQL (README rules; RFC 9110/9112, RFC 6750).
import assert from 'node:assert/strict'
import { Buffer } from 'node:buffer'
import { after, before, describe, it } from 'node:test'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { assertWellFormed, HttpClient, rawExchange, type Seen } from './fuzz-http.js'

const JSON_TYPE = { 'content-type': 'application/json' }

function assertDeprecated(seen: Seen): void {
  assert.equal(seen.headers.get('deprecation'), '@1795132800')
  assert.equal(seen.headers.get('sunset'), 'Thu, 05 Dec 2030 00:00:00 GMT')
  assert.equal(seen.headers.get('link'), '</v1/pets>; rel="successor-version"')
}

function fields(seen: Seen): string[] {
  return [
    ...new Set(JSON.parse(seen.text).details.map((detail: { in: string; field: string }) => `${detail.in}.${detail.field}`)),
  ]
    .map(String)
    .sort()
}

describeEachDatabase('fuzz regressions', (database) => {
  let server: TestServer
  let client: HttpClient
  let petId: string
  before(async () => {
    server = await startServer({ database })
    client = new HttpClient(server.origin)
    petId = (await call(server, 'POST', '/v1/pets', { body: { name: 'Rex', categoryId: 1 } })).exact.id.toString()
  })
  after(async () => {
    client.close()
    await server.close()
  })

  /** One request over node:http (the target exactly as given), checked like every fuzz request against `contractPath`. */
  async function send(
    method: string,
    path: string,
    options: { authorization?: string | null; headers?: Record<string, string>; body?: string } = {},
    contractPath = path,
  ): Promise<Seen> {
    const authorization = options.authorization === undefined ? `Bearer ${server.key}` : options.authorization
    const headers = { ...(authorization !== null && { authorization }), ...options.headers }
    const seen = await client.send({ method, path, headers, body: options.body })
    assertWellFormed(method, contractPath, seen, `${method} ${path}`)
    return seen
  }

  /** Raw request bytes on a fresh connection (ending `Connection: close`); every answer is checked. */
  async function raw(head: string, body = '', contractPath = '/v1/pets', method = 'GET', halfClose = false): Promise<Seen[]> {
    const bytes = Buffer.concat([Buffer.from(head.replace(/KEY/g, server.key), 'latin1'), Buffer.from(body)])
    const result = await rawExchange(Number(new URL(server.origin).port), bytes, { halfClose })
    assert.ok(!result.timedOut, 'an answer within 5 s')
    assert.ok(result.responses.length > 0, 'an answer before the connection closes')
    for (const seen of result.responses) assertWellFormed(method, contractPath, seen, JSON.stringify(head.slice(0, 120)))
    return result.responses
  }

  describe('the key is checked however the path is spelled (README: "checked before anything else under /v1")', () => {
    for (const target of ['http://127.0.0.1/v1/pets?limit=1', 'https://other.example/v1/pets', 'HTTP://X/v1/pets']) {
      it(`GET ${target} (absolute-form target, RFC 9112 §3.2.2) without a key is 401, not the list`, async () => {
        const seen = await send('GET', target, { authorization: null }, '/v1/pets')
        assert.equal(seen.status, 401, seen.text)
        assert.equal(JSON.parse(seen.text).code, 'missing_api_key')
      })
    }

    it('POST http://127.0.0.1/v1/pets without a key is 401 and creates nothing', async () => {
      const body = '{"name":"sneaky","categoryId":1}'
      const seen = await send('POST', 'http://127.0.0.1/v1/pets', { authorization: null, headers: JSON_TYPE, body }, '/v1/pets')
      assert.equal(seen.status, 401, seen.text)
      const list = await call(server, 'GET', '/v1/pets?limit=100')
      assert.ok(!list.json.some((pet: { name: string }) => pet.name === 'sneaky'), 'no pet created without a key')
    })

    for (const path of ['/%76%31/pets', '/v%31/pets?limit=1', '/%76%31/pets/PET', '/v1/%70ets']) {
      it(`GET ${path} (percent-encoded unreserved characters, RFC 3986 §6.2.2.2) without a key is 401`, async () => {
        const target = path.replace('PET', petId)
        const seen = await call(server, 'GET', target, { key: null })
        assert.equal(seen.status, 401, seen.text)
        assert.equal(seen.json.code, 'missing_api_key')
      })
    }

    it('GET /%76%31/pets with the key answers as GET /v1/pets', async () => {
      const seen = await send('GET', '/%76%31/pets?limit=1', {}, '/v1/pets?limit=1')
      assert.equal(seen.status, 200, seen.text)
    })

    it('a wrong key on an absolute-form target is 401 invalid_api_key, not served', async () => {
      const seen = await send('GET', 'http://x/v1/pets', { authorization: 'Bearer wrong-key-0123456789' }, '/v1/pets')
      assert.equal(seen.status, 401, seen.text)
      assert.equal(JSON.parse(seen.text).code, 'invalid_api_key')
    })
  })

  describe('framework errors are catalog errors, after the key check', () => {
    // the shrunk counterexample: 101 characters (find-my-way's maxParamLength is 100)
    const long = '0aa0aa0a0000aa00a0a0a0aaa00a0a0000aaa0a0aaa0a00a0a0a00aa0a00a000aa0a00a0aaa0a0000aaa00a0a0aa0aaa0a000'

    it('GET /v1/pets/{a 101-character petId} is 400 invalid_request naming petId, with the deprecation headers, not 500', async () => {
      const seen = await call(server, 'GET', `/v1/pets/${long}`)
      assert.equal(seen.status, 400, seen.text)
      assert.equal(seen.json.code, 'invalid_request')
      assert.deepEqual(fields(seen), ['path.petId'])
      assertDeprecated(seen)
    })

    it('GET /v1/pets/{101 digits} is 400 invalid_request naming petId (not an int64), not 500', async () => {
      const seen = await call(server, 'GET', `/v1/pets/1${'0'.repeat(100)}`)
      assert.equal(seen.status, 400, seen.text)
      assert.deepEqual(fields(seen), ['path.petId'])
    })

    it('GET /v1/pets/{a 101-character petId} without a key is 401, not 500', async () => {
      const seen = await call(server, 'GET', `/v1/pets/${long}`, { key: null })
      assert.equal(seen.status, 401, seen.text)
    })

    for (const segment of ['1%', '%E0%A4%A', '%FF', '1%Z1']) {
      // A URL that cannot be percent-decoded is not routed to any operation (so no getPet headers).
      it(`GET /v1/pets/${segment} (malformed percent-encoding) is 400 invalid_request`, async () => {
        const seen = await send('GET', `/v1/pets/${segment}`)
        assert.equal(seen.status, 400, seen.text)
        assert.equal(JSON.parse(seen.text).code, 'invalid_request')
      })
    }

    it('GET /v1/pets/1% without a key is 401, not 400', async () => {
      const seen = await send('GET', '/v1/pets/1%', { authorization: null })
      assert.equal(seen.status, 401, seen.text)
    })

    it('QUERY /v1/pets without a Content-Type is 405 method_not_allowed with Allow, not 500', async () => {
      const seen = await send('QUERY', '/v1/pets')
      assert.equal(seen.status, 405, seen.text)
      assert.equal(seen.headers.get('allow'), 'GET, HEAD, POST')
    })

    it('GET and PUT /v1/pets/ (an empty petId names no animal) are both 404 not_found, as an unknown path', async () => {
      for (const method of ['GET', 'PUT'] as const) {
        const seen = await call(server, method, '/v1/pets/')
        assert.equal(seen.status, 404, `${method}: ${seen.text}`)
        assert.equal(seen.json.code, 'not_found', method)
      }
    })
  })

  describe('malformed HTTP is answered with the Error body (README: "all carry the Error body")', () => {
    const valid = '{"name":"raw","categoryId":3}'
    const cases: Array<[string, string, string?]> = [
      [
        'a control character in a header value',
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\u0001\r\nConnection: close\r\n\r\n',
      ],
      [
        'an invalid header name',
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nBad Name: 1\r\nConnection: close\r\n\r\n',
      ],
      ['an unknown method token', 'FOO /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nConnection: close\r\n\r\n'],
      ['a lower-case method', 'get /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nConnection: close\r\n\r\n'],
      ['an unknown HTTP version', 'GET /v1/pets HTTP/9.9\r\nHost: x\r\nAuthorization: Bearer KEY\r\nConnection: close\r\n\r\n'],
      ['bare LF line endings', 'GET /v1/pets HTTP/1.1\nHost: x\nAuthorization: Bearer KEY\nConnection: close\n\n'],
      [
        'an obsolete folded header line',
        'GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nX-Fold: a\r\n b\r\nConnection: close\r\n\r\n',
      ],
      [
        'raw non-ASCII bytes in the target',
        'GET /v1/pets/\u00c3\u00a9 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nConnection: close\r\n\r\n',
      ],
      [
        'two different Content-Length values',
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Length: ${valid.length}\r\nContent-Length: ${valid.length + 1}\r\nConnection: close\r\n\r\n`,
        valid,
      ],
      [
        'an HTTP/1.0 GET with two different Content-Length values (the shrunk counterexample)',
        `GET /v1/pets HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Length: ${valid.length}\r\nContent-Length: ${valid.length + 1}\r\nConnection: close\r\n\r\n`,
        valid,
      ],
      [
        'a negative Content-Length',
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Length: -1\r\nConnection: close\r\n\r\n',
        valid,
      ],
      [
        'Content-Length together with Transfer-Encoding: chunked',
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
        '0\r\n\r\n',
      ],
      [
        'a malformed chunk size',
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
        `zz\r\n${valid}\r\n0\r\n\r\n`,
      ],
      [
        'Transfer-Encoding: gzip (no chunked framing)',
        'POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n',
        valid,
      ],
      [
        'bytes after a complete request (Content-Length 3 short of the body)',
        `PUT /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nContent-Type: application/json\r\nContent-Length: ${valid.length - 3}\r\nConnection: close\r\n\r\n`,
        valid,
      ],
      [
        'an HTTP/1.1 request without Host (RFC 9112 §3.2)',
        'GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer KEY\r\nConnection: close\r\n\r\n',
      ],
      [
        'an Expect other than 100-continue (Node answers a bare 417)',
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nExpect: nothing\r\nContent-Type: application/json\r\nContent-Length: ${valid.length}\r\nConnection: close\r\n\r\n`,
        valid,
      ],
      [
        'request headers over 16 KiB (431 is not in the catalog)',
        `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nX-Big: ${'a'.repeat(17000)}\r\nConnection: close\r\n\r\n`,
      ],
    ]
    for (const [label, head, body] of cases) {
      it(`answers ${label} with a catalog Error, never Fastify's {"error":…} body or an empty one`, async () => {
        const method = /^[A-Z]+/.exec(head)?.[0] ?? 'GET'
        const responses = await raw(head, body, '/v1/pets', method)
        // RFC 9110 §10.1.1 lets a server ignore an unknown expectation; everything else here is a client error
        if (!head.includes('Expect'))
          assert.ok(responses[0] && responses[0].status >= 400, `an error status, got ${responses[0]?.status}`)
      })
    }

    it('answers an Expect other than 100-continue without a key with 401, as every request under /v1', async () => {
      const [seen] = await raw('GET /v1/pets HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\nConnection: close\r\n\r\n')
      assert.equal(seen?.status, 401, seen?.text)
    })
  })

  it('still answers a client that half-closes its side after the request (TCP FIN right after the bytes)', async () => {
    // the shrunk counterexample: two Authorization lines, the second a UTF-8 "Ā"
    const twoKeys =
      'GET /v1/pets?limit=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: bearer KEY\r\nAuthorization: \u00c4\u0080\r\nConnection: close\r\n\r\n'
    const [first] = await raw(twoKeys, '', '/v1/pets?limit=1', 'GET', true)
    assert.equal(first?.status, 200, 'the first Authorization counts (node keeps the first of repeated ones)')
    for (let k = 0; k < 5; k++) {
      const [seen] = await raw(
        'GET /v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY\r\nConnection: close\r\n\r\n',
        '',
        '/v1/pets?limit=1',
        'GET',
        true,
      )
      assert.equal(seen?.status, 200)
    }
  })

  describe('details and codes the README promises', () => {
    it('GET /v1/pets?cursor=abc&status=Available names both cursor and status in details (every failing input)', async () => {
      const seen = await call(server, 'GET', '/v1/pets?cursor=abc&status=Available')
      assert.equal(seen.status, 400)
      assert.deepEqual(fields(seen), ['query.cursor', 'query.status'])
    })

    it('GET /v1/pets?limit=0&cursor=abc names both limit and cursor', async () => {
      const seen = await call(server, 'GET', '/v1/pets?limit=0&cursor=abc')
      assert.equal(seen.status, 400)
      assert.deepEqual(fields(seen), ['query.cursor', 'query.limit'])
    })

    it('reads Content-Type: application/json; foo="a;charset=latin1" as UTF-8 JSON (a quoted parameter value is not a charset)', async () => {
      const seen = await call(server, 'POST', '/v1/pets', {
        body: '{"categoryId":0,"name":"N"}',
        headers: { 'content-type': 'application/json;foo="a;charset=latin1"' },
      })
      assert.equal(seen.status, 201, seen.text)
    })

    for (const body of ['\u3000', '\u00a0', '\ufeff\ufeff', ' \u2028 ']) {
      it(`answers a body of only ${JSON.stringify(body)} (not JSON whitespace) 400 invalid_json, not "body is required"`, async () => {
        const seen = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
        assert.equal(seen.status, 400)
        assert.equal(seen.json.code, 'invalid_json', seen.text)
      })
    }

    for (const [label, body] of [
      ['{} and []', '{"name":"x","categoryId":1,"x":{},"x":[]}'],
      ['{"0":1} and [1]', '{"name":"x","categoryId":1,"x":{"0":1},"x":[1]}'],
      ['1e400 and 2e400', '{"name":"x","categoryId":1e400,"categoryId":2e400}'],
      [
        '{} and [] under an escaped "name"',
        '{"status":"available","categoryId":0,"\\u006e\\u0061\\u006d\\u0065":{},"\\u006e\\u0061\\u006d\\u0065":[]}',
      ],
    ]) {
      // lossless-json compares repeats structurally and deems these equal (so they count as one
      // member, which then fails validation); either way the body is refused and nothing is stored.
      it(`refuses a key repeated as ${label} with 400 (invalid_json or invalid_request)`, async () => {
        const seen = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
        assert.equal(seen.status, 400)
        assert.match(seen.json.code, /^invalid_(json|request)$/, seen.text)
      })
    }

    for (const [label, body, failing] of [
      ['categoryId 1e-400', '{"name":"x","categoryId":1e-400,"categoryId":1e-400}', ['categoryId']],
      [
        'a nested 0.1e-1000 (the shrunk counterexample)',
        '{"name":[{"":{"name":0.1e-1000}}],"name":[{"":{"name":0.1e-1000}}]}',
        ['categoryId', 'name'],
      ],
      [
        'categoryId 1.00000000000000001',
        '{"name":"x","categoryId":1.00000000000000001,"categoryId":1.00000000000000001}',
        ['categoryId'],
      ],
    ] as const) {
      it(`treats a key repeated with the same value (${label}) as one and validates it: 400 invalid_request naming ${failing.join(', ')}`, async () => {
        const seen = await call(server, 'POST', '/v1/pets', { body, headers: JSON_TYPE })
        assert.equal(seen.status, 400)
        assert.equal(seen.json.code, 'invalid_request', seen.text)
        assert.deepEqual(
          fields(seen),
          failing.map((field) => `body.${field}`),
        )
      })
    }
  })
})
