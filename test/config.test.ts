// loadConfig(): defaults, accepted forms, and a clear error naming the variable for every bad value.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../src/config.js'

describe('configuration (loadConfig)', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({}, '/srv/app')
    assert.equal(config.port, 8080)
    assert.equal(config.host, '127.0.0.1')
    assert.deepEqual(config.database, { dialect: 'sqlite', path: '/srv/app/data/animal-store.db' })
    assert.deepEqual(config.apiKeys, [])
    assert.equal(config.logLevel, 'info')
    assert.equal(config.publicUrl, undefined)
    assert.deepEqual(config.corsOrigins, [])
    assert.ok(Object.isFrozen(config))
  })

  it('reads every variable', () => {
    const config = loadConfig(
      {
        PORT: '0',
        HOST: '0.0.0.0',
        DATABASE_URL: 'sqlite:/var/lib/pets.db',
        API_KEYS: ' first-key-0123456789 ,second-key-0123456789,',
        LOG_LEVEL: 'WARN',
        PUBLIC_URL: 'https://api.example.com/v1/',
        CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,',
      },
      '/srv/app',
    )
    assert.equal(config.port, 0)
    assert.equal(config.host, '0.0.0.0')
    assert.deepEqual(config.database, { dialect: 'sqlite', path: '/var/lib/pets.db' })
    assert.deepEqual(config.apiKeys, ['first-key-0123456789', 'second-key-0123456789'])
    assert.equal(config.logLevel, 'warn')
    assert.equal(config.publicUrl, 'https://api.example.com/v1')
    assert.deepEqual(config.corsOrigins, ['https://app.example.com', 'http://localhost:5173'])
  })

  it('resolves a relative SQLite path against the working directory and keeps :memory:', () => {
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:db/x.db' }, '/w').database, { dialect: 'sqlite', path: '/w/db/x.db' })
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite::memory:' }, '/w').database, { dialect: 'sqlite', path: ':memory:' })
  })

  const bad: Array<[string, string]> = [
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['PORT', '-1'],
    ['PORT', '80.5'],
    ['HOST', 'my host'],
    ['DATABASE_URL', 'mysql://localhost/pets'],
    ['DATABASE_URL', 'sqlite:'],
    ['DATABASE_URL', 'pets.db'],
    ['API_KEYS', 'short'],
    ['API_KEYS', 'has a space in it 0123456789'],
    ['LOG_LEVEL', 'loud'],
    ['PUBLIC_URL', 'ftp://example.com/v1'],
    ['PUBLIC_URL', 'https://example.com/v2'],
    ['PUBLIC_URL', 'not a url'],
    ['PUBLIC_URL', 'https://example.com/v1?x=1'],
    ['CORS_ORIGINS', 'app.example.com'],
    ['CORS_ORIGINS', 'https://app.example.com/'],
    ['CORS_ORIGINS', 'https://app.example.com/app'],
    ['CORS_ORIGINS', 'ftp://app.example.com'],
    ['CORS_ORIGINS', '*'],
    ['CORS_ORIGINS', 'https://ok.example.com,https://user@app.example.com'],
  ]
  for (const [variable, value] of bad) {
    it(`rejects ${variable}=${value} naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [variable]: value }, '/w'),
        (error: unknown) => error instanceof ConfigError && error.variable === variable && error.message.startsWith(variable),
      )
    })
  }

  it('refuses WORKERS > 1 with an in-memory SQLite store (each worker would have its own)', () => {
    assert.throws(
      () => loadConfig({ WORKERS: '2', DATABASE_URL: 'sqlite::memory:' }, '/w'),
      (error: unknown) => error instanceof ConfigError && error.variable === 'WORKERS',
    )
    assert.equal(loadConfig({ WORKERS: '2', DATABASE_URL: 'sqlite:x.db' }, '/w').workers, 2)
  })

  it('never repeats an API_KEYS value in its error', () => {
    const secret = 'not ok secret with spaces 123456'
    assert.throws(
      () => loadConfig({ API_KEYS: `good-key-0123456789abcdef,${secret}` }, '/w'),
      (error: unknown) => error instanceof ConfigError && !error.message.includes(secret) && /entry 2/.test(error.message),
    )
  })
})
