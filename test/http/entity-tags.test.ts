// The data behind every ETag (src/http/pipeline/conditional-requests.ts): the OpenAPI document's
// hash is SHA-256 of its bytes, and the pets' tags are made from what names a representation, keyed
// by the database's secret and the Pet schema, so that each input that names another representation
// gives another tag and nothing else does.
import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import { createPetTags, ETAG_MAX_LENGTH, representationHash } from '../../src/http/pipeline/conditional-requests.js'
import { INT64_MIN } from '../../src/int64.js'
import { Pet } from '../../src/schemas.js'

const SCHEMA = JSON.stringify(Pet)

describe('representationHash', () => {
  it('is SHA-256 of the bytes, 16 bytes in base64url', () => {
    const body = Buffer.from('{"openapi":"3.1.0"}')
    assert.equal(representationHash(body), createHash('sha256').update(body).digest('base64url').slice(0, 22))
  })
})

describe('createPetTags', () => {
  const secret = randomBytes(32)
  const tags = createPetTags(secret, SCHEMA)

  it('gives a pet the same tag every time, and each pet its own', () => {
    assert.equal(tags.pet('1'), createPetTags(secret, SCHEMA).pet('1'), 'another process with the same secret')
    assert.notEqual(tags.pet('1'), tags.pet('2'))
    assert.notEqual(tags.pet('-1'), tags.pet('1'))
    assert.match(tags.pet('9223372036854775807'), /^[A-Za-z0-9_-]{8}_9223372036854775807$/)
    // Quoted, with the longest coding suffix, the longest id's tag is the longest ETag the document allows.
    assert.equal(`"${tags.pet(String(INT64_MIN))}-gzip"`.length, ETAG_MAX_LENGTH)
  })

  it("changes every tag with the database's secret and with the Pet schema", () => {
    assert.notEqual(createPetTags(randomBytes(32), SCHEMA).pet('1'), tags.pet('1'))
    assert.notEqual(createPetTags(secret, JSON.stringify({ ...Pet, description: 'changed' })).pet('1'), tags.pet('1'))
    assert.notEqual(createPetTags(randomBytes(32), SCHEMA).page('a', undefined), tags.page('a', undefined))
  })

  it("gives a page a new tag for any change of its identity or of its next link, and never a pet's", () => {
    const identity = 'sold\n\n40,41,42'
    const base = tags.page(identity, undefined)
    assert.equal(tags.page(identity, undefined), base)
    assert.notEqual(tags.page('sold\n\n40,41,42,43', undefined), base, 'one more pet')
    assert.notEqual(tags.page('sold\n\n39,41,42', undefined), base, 'another pet in it')
    assert.notEqual(tags.page('\n\n40,41,42', undefined), base, 'another filter')
    assert.notEqual(tags.page(identity, '</v1/pets?limit=20&status=sold&cursor=x>; rel="next"'), base, 'a next page')
    assert.notEqual(tags.page('42', undefined), tags.pet('42'))
  })
})
