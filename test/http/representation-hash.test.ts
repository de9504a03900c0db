// The hash behind every ETag (src/http/pipeline/conditional-requests.ts), and the bounded cache in
// front of it: a remembered hash is always the one SHA-256 gives, before and after the cache is
// dropped, and a header changes the hash.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, it } from 'node:test'
import { HASH_CACHE_CHARACTERS, representationHash } from '../../src/http/pipeline/conditional-requests.js'

/** The hash as the documented input defines it, computed here without the service's code. */
const expected = (data: string | Buffer) => createHash('sha256').update(data).digest('base64url').slice(0, 22)
const page = (n: number, length: number) => `[{"id":${n},"name":"${'x'.repeat(length)}"}]`

describe('representationHash', () => {
  it('is SHA-256 of the body, or of the header with its length and then the body', () => {
    const body = page(1, 40)
    const link = '</v1/pets?limit=1&cursor=MQ.abc>; rel="next"'
    assert.equal(representationHash(body), expected(body))
    assert.equal(representationHash(body, link), expected(`${link.length}:${link}${body}`))
    assert.equal(representationHash(Buffer.from(body)), expected(body))
    assert.notEqual(representationHash(body, link), representationHash(body))
    assert.notEqual(representationHash(body, link), representationHash(body, `${link} `))
  })

  it('answers from its cache with the same hash, and stays right once the cache is full and dropped', () => {
    const first = page(0, 100)
    assert.equal(representationHash(first), expected(first))
    assert.equal(representationHash(first), expected(first), 'the second call, from the cache')
    // More distinct pages than the cache holds: it is dropped at least once on the way.
    const count = Math.ceil((2 * HASH_CACHE_CHARACTERS) / 1000)
    for (let n = 1; n <= count; n++) {
      const each = page(n, 1000)
      assert.equal(representationHash(each), expected(each), `page ${n}`)
    }
    assert.equal(representationHash(first), expected(first), 'after the cache was dropped')
    const huge = page(-1, HASH_CACHE_CHARACTERS)
    assert.equal(representationHash(huge), expected(huge), 'data larger than the whole cache')
    assert.equal(representationHash(huge), expected(huge))
  })
})
