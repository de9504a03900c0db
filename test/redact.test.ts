// redactCredentials(): URL passwords never reach what the CLI prints.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { redactCredentials } from '../src/redact.js'

describe('redactCredentials', () => {
  const cases: Array<[string, string]> = [
    ["unknown option '--to=postgres://app:s3cr3t@db:5432/x'", "unknown option '--to=postgres://app:***@db:5432/x'"],
    ['postgresql://app:p@ss:w0rd@db/x?sslmode=verify-full', 'postgresql://app:***@db/x?sslmode=verify-full'],
    ['a postgres://a:1@h/d and a postgres://b:2@h/d', 'a postgres://a:***@h/d and a postgres://b:***@h/d'],
    ['postgres://:only-password@h/d', 'postgres://:***@h/d'],
  ]
  for (const [text, redacted] of cases) {
    it(`redacts the password in ${JSON.stringify(text)}`, () => assert.equal(redactCredentials(text), redacted))
  }
  for (const text of ['postgres://app@db/x', 'sqlite:data/animal-store.db', 'connect ECONNREFUSED 127.0.0.1:5432', 'a:b@c']) {
    it(`leaves ${JSON.stringify(text)} as it is`, () => assert.equal(redactCredentials(text), text))
  }
})
