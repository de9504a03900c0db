// loadConfig(): defaults, accepted forms, and a clear error naming the variable for every bad value.
import assert from 'node:assert/strict'
import { chmodSync, writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { tempDir } from '../scripts/lib/test-server.js'
import { generateApiKey } from '../src/api-keys.js'
import { ConfigError, loadConfig, loadCopyUrls, VARIABLES } from '../src/config.js'
import { type ConfiguredKey, DEFAULT_KEY_SCOPE, type KeyGrants, MAX_RATE_LIMIT_PER_MINUTE } from '../src/key-grants.js'
import { estimateEntropyBits } from '../src/key-strength.js'

/** Two keys as an operator would generate them (24 random bytes, base64url). */
const KEY_1 = 'VmK7fmMSJjj2h6pgkbKTqRkoV0_lt6II'
const KEY_2 = 'dsBKixa5VVB5C3-S2nrRHqjDiTS0_XKx'

/** An API_KEYS entry as loadConfig gives it: `key` with the grants given, else the defaults (`write`, no own limit). */
const entry = (key: string, grants: Partial<KeyGrants> = {}): ConfiguredKey => ({
  key,
  scope: DEFAULT_KEY_SCOPE,
  rateLimit: undefined,
  ...grants,
})

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
        API_KEYS: ` ${KEY_1} ,${KEY_2},`,
        LOG_LEVEL: 'WARN',
        PUBLIC_URL: 'https://api.example.com/v1/',
        CORS_ORIGINS: 'https://app.example.com, http://localhost:5173,',
      },
      '/srv/app',
    )
    assert.equal(config.port, 0)
    assert.equal(config.host, '0.0.0.0')
    assert.deepEqual(config.database, { dialect: 'sqlite', path: '/var/lib/pets.db' })
    assert.deepEqual(config.apiKeys, [entry(KEY_1), entry(KEY_2)])
    assert.equal(config.logLevel, 'warn')
    assert.equal(config.publicUrl, 'https://api.example.com/v1')
    assert.deepEqual(config.corsOrigins, ['https://app.example.com', 'http://localhost:5173'])
  })

  it('reads TRUST_PROXY as a list of addresses, CIDR ranges and named ranges; unset trusts no proxy', () => {
    assert.deepEqual(loadConfig({}, '/w').trustProxy, [])
    assert.deepEqual(loadConfig({ TRUST_PROXY: ' 127.0.0.1, 10.0.0.0/8,fd00::/8 ,uniquelocal,' }, '/w').trustProxy, [
      '127.0.0.1',
      '10.0.0.0/8',
      'fd00::/8',
      'uniquelocal',
    ])
  })

  it('reads RATE_LIMIT_STORE_URL as a redis:// or rediss:// URL, with a database number and a password; unset = per process', () => {
    assert.equal(loadConfig({}, '/w').rateLimitStoreUrl, undefined)
    for (const url of ['redis://127.0.0.1:6379', 'redis://valkey:6379/2', 'rediss://:s3cret@cache.internal:6380/0']) {
      assert.equal(loadConfig({ RATE_LIMIT_STORE_URL: url }, '/w').rateLimitStoreUrl, url)
    }
  })

  it('refuses a RATE_LIMIT_STORE_URL whose password or user name has a % that does not decode, naming the variable only', () => {
    for (const url of ['redis://:hunter%zz2@cache:6379', 'rediss://hunter%e0:pw@cache:6380/1', 'redis://:hunter%@cache:6379']) {
      assert.throws(
        () => loadConfig({ RATE_LIMIT_STORE_URL: url }, '/w'),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.variable === 'RATE_LIMIT_STORE_URL' &&
          /write a % itself as %25/.test(error.message) &&
          !error.message.includes('hunter'),
      )
    }
    assert.equal(
      loadConfig({ RATE_LIMIT_STORE_URL: 'redis://:100%25@cache:6379' }, '/w').rateLimitStoreUrl,
      'redis://:100%25@cache:6379',
    )
  })

  it('never echoes a RATE_LIMIT_STORE_URL it refuses (it may hold a password)', () => {
    assert.throws(
      () => loadConfig({ RATE_LIMIT_STORE_URL: 'http://:hunter2-password@cache:6379' }, '/w'),
      (error: unknown) => error instanceof ConfigError && !error.message.includes('hunter2'),
    )
  })

  describe('DATABASE_REPLICA_URLS: the streaming replicas reads may come from', () => {
    const PRIMARY = 'postgres://app:s3cr3t@db:5432/pets'
    const withPrimary = (replicas: string) => loadConfig({ DATABASE_URL: PRIMARY, DATABASE_REPLICA_URLS: replicas }, '/w')
    const refusal = (replicas: string, database = PRIMARY) => {
      try {
        loadConfig({ DATABASE_URL: database, DATABASE_REPLICA_URLS: replicas }, '/w')
      } catch (error) {
        assert.ok(error instanceof ConfigError && error.variable === 'DATABASE_REPLICA_URLS', String(error))
        return error.message
      }
      assert.fail(`DATABASE_REPLICA_URLS=${replicas} was accepted`)
    }

    it('reads a comma-separated list of postgres:// URLs; none when unset', () => {
      assert.deepEqual(loadConfig({ DATABASE_URL: PRIMARY }, '/w').databaseReplicaUrls, [])
      assert.deepEqual(
        withPrimary(' postgres://app:s3cr3t@replica-1:6432/pets, postgresql://app@replica-2/pets ,').databaseReplicaUrls,
        ['postgres://app:s3cr3t@replica-1:6432/pets', 'postgresql://app@replica-2/pets'],
      )
    })

    it('refuses it with SQLite, saying that replicas are PostgreSQL streaming replicas', () => {
      assert.match(
        refusal('postgres://app@replica-1/pets', 'sqlite:pets.db'),
        /DATABASE_URL is SQLite: replicas are PostgreSQL streaming replicas/,
      )
    })

    it('refuses an entry that is not a postgres:// URL, or is DATABASE_URL itself, naming the entry, never echoing a URL', () => {
      assert.match(
        refusal('postgres://app:s3cr3t@replica-1/pets,mysql://app:hunter2@replica-2/pets'),
        /^DATABASE_REPLICA_URLS entry 2 is not usable/,
      )
      assert.match(refusal(PRIMARY), /^DATABASE_REPLICA_URLS entry 1 is not usable: .*not DATABASE_URL itself/)
      for (const replicas of ['postgres://app:hunter2@replica-1/pets,replica-2', `${PRIMARY},postgres://app:hunter2@[::1/x`]) {
        const message = refusal(replicas)
        assert.ok(!message.includes('hunter2') && !message.includes('s3cr3t'), message)
      }
    })

    it('refuses more than 16 replicas (each is checked four times a second by every process)', () => {
      const urls = Array.from({ length: 17 }, (_, i) => `postgres://app@replica-${i}/pets`)
      assert.equal(withPrimary(urls.slice(0, 16).join(',')).databaseReplicaUrls.length, 16)
      assert.match(refusal(urls.join(',')), /lists 17 replicas; at most 16/)
    })
  })

  for (const url of ['http://localhost:8080/api/v1', 'http://[::1]:8080/v1', 'https://api.example.com/a%20b/v1']) {
    it(`accepts PUBLIC_URL=${url}, already in normal form, as given`, () => {
      assert.equal(loadConfig({ PUBLIC_URL: url }, '/w').publicUrl, url)
    })
  }

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
    // 264 characters (a valid 253-character host): over URL_MAX_LENGTH, the bound openapi.json states for Location and Link.
    ['PUBLIC_URL', `https://${'abcdefghi.'.repeat(25)}com/v1`],
    ['PUBLIC_URL', 'https://example.com/v2'],
    ['PUBLIC_URL', 'not a url'],
    ['PUBLIC_URL', 'https://example.com/v1?x=1'],
    ['PUBLIC_URL', 'https://api.example.com/x\r\nSet-Cookie: a=b/v1'],
    ['PUBLIC_URL', 'https://api.example.com/a\tb/v1'],
    ['PUBLIC_URL', 'https://api.example.com/a\u0000/v1'],
    ['PUBLIC_URL', 'https://api.example.com/"x"/v1'],
    ['PUBLIC_URL', 'https://api.example.com/<x>/v1'],
    ['PUBLIC_URL', 'https://api.example.com/a b/v1'],
    ['PUBLIC_URL', 'https://user:pass@api.example.com/v1'],
    ['PUBLIC_URL', 'https://user@api.example.com/v1'],
    ['PUBLIC_URL', 'https://API.example.com/v1'],
    ['PUBLIC_URL', 'https://api.example.com/a/../v1'],
    ['PUBLIC_URL', 'http:///v1'],
    ['PUBLIC_URL', 'file:///v1'],
    ['TRUST_PROXY', 'nginx'],
    ['TRUST_PROXY', '10.0.0.0/33'],
    ['TRUST_PROXY', '10.0.0.1,::1/129'],
    ['TRUST_PROXY', '10.0.0.0/8/8'],
    ['TRUST_PROXY', '10.0.0.0/'],
    ['CORS_ORIGINS', 'app.example.com'],
    ['CORS_ORIGINS', `https://${'abcdefghi.'.repeat(25)}com`],
    ['CORS_ORIGINS', 'https://app.example.com/'],
    ['CORS_ORIGINS', 'https://app.example.com/app'],
    ['CORS_ORIGINS', 'ftp://app.example.com'],
    ['CORS_ORIGINS', '*'],
    ['RATE_LIMIT_STORE_URL', 'valkey:6379'],
    ['RATE_LIMIT_STORE_URL', 'http://cache:6379'],
    ['RATE_LIMIT_STORE_URL', 'redis:///0'],
    ['RATE_LIMIT_STORE_URL', 'redis://cache:6379/db'],
    ['RATE_LIMIT_STORE_URL', 'redis://cache:6379/0?tls=1'],
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

  // Each integer and boolean variable is one VARIABLES entry: its bounds, default and spellings are
  // checked here from the entry itself, so a new one is tested without a line here.
  const fieldOf = (name: string) => name.toLowerCase().replace(/_(.)/g, (_, letter: string) => letter.toUpperCase())
  const fields = loadConfig({}, '/w') as unknown as Record<string, unknown>
  for (const [name, schema] of Object.entries(VARIABLES)) {
    const entry = schema as { type?: string; minimum?: number; maximum?: number; default?: unknown; 'x-message'?: string }
    // A variable parsed by code of its own may feed another field (DATABASE_POOL_MAX → database).
    const field = fieldOf(name) in fields ? fieldOf(name) : undefined
    if (entry.type === 'integer') {
      const { minimum = 0, maximum = 0 } = entry
      it(`reads ${name} as an integer from ${minimum} to ${maximum}, ${entry.default} when unset or empty`, () => {
        const expected = `${name} ${entry['x-message'] ?? `must be an integer from ${minimum} to ${maximum}.`}`
        for (const value of [`${maximum + 1}`, `${minimum - 1}`, `${minimum}.5`, ` ${minimum}`, '1e1', 'x']) {
          assert.throws(() => loadConfig({ [name]: value }, '/w'), { name: 'ConfigError', variable: name, message: expected })
        }
        for (const value of [minimum, maximum]) {
          const config = loadConfig({ [name]: `${value}`, ...(name === 'PORT' ? { METRICS_PORT: '0' } : {}) }, '/w')
          if (field) assert.equal((config as unknown as Record<string, unknown>)[field], value)
        }
        if (field) assert.equal(fields[field], entry.default)
        if (field) assert.equal((loadConfig({ [name]: '' }, '/w') as unknown as Record<string, unknown>)[field], entry.default)
      })
    }
    if (entry.type === 'boolean' && field) {
      it(`reads ${name} as true/false, 1/0, yes/no or on/off in any case, ${entry.default} when unset`, () => {
        const read = (value: string) => (loadConfig({ [name]: value }, '/w') as unknown as Record<string, unknown>)[field]
        for (const value of ['true', '1', 'YES', 'On']) assert.equal(read(value), true)
        for (const value of ['false', '0', 'No', 'OFF']) assert.equal(read(value), false)
        assert.equal(fields[field], entry.default)
        assert.throws(() => read('maybe'), { name: 'ConfigError', variable: name, message: `${name} must be true or false.` })
      })
    }
  }

  it('names auto in the WORKERS error, as the help does, and takes it', () => {
    assert.throws(() => loadConfig({ WORKERS: 'many' }, '/w'), {
      name: 'ConfigError',
      message: 'WORKERS must be an integer from 1 to 64, or auto (one per CPU).',
    })
    assert.equal(loadConfig({ WORKERS: 'auto' }, '/w').workers, Math.min(availableParallelism(), 64))
  })

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
      () => loadConfig({ API_KEYS: `${KEY_1},${secret}` }, '/w'),
      (error: unknown) => error instanceof ConfigError && !error.message.includes(secret) && /entry 2/.test(error.message),
    )
  })

  describe('API_KEYS entries must be long and random (at least 16 characters and an estimated 40 bits)', () => {
    const weak: Array<[string, string]> = [
      ['aaaaaaaaaaaaaaaaaaaaaaaa', 'one repeated character'],
      ['abababababababababababab', 'two alternating characters'],
      ['0123456789abcdefghijklmn', 'a run of consecutive characters'],
      ['0123456789abcdef', '16 distinct characters, but too short and sequential'],
      ['Password123456789!Passw', 'a password with a counting run'],
      ['Xk3_pQ9-vR2', 'random, but shorter than 16 characters'],
    ]
    for (const [key, why] of weak) {
      it(`refuses ${key} (${why}) without echoing it`, () => {
        assert.throws(
          () => loadConfig({ API_KEYS: key }, '/w'),
          (error: unknown) =>
            error instanceof ConfigError &&
            error.variable === 'API_KEYS' &&
            !error.message.includes(key) &&
            /40\+ bits/.test(error.message),
        )
      })
    }
    const strong: Array<[string, string]> = [
      [generateApiKey().key, 'a generated ask_ key'],
      [KEY_1, '32 random base64url characters'],
      ['kZ8vQ2mX7pL4nR9tW1yB6c', '22 random base64url characters'],
      ['aB3dE5fG7hJ9kL1m', '16 mixed characters, the shortest accepted'],
      ['integration-test-key', 'words of 20 characters, as a test setup might use'],
      [
        '3q2+7w8Zr0Q9YbVxk1mN4tUuP5sE6dJ7fH8gK9lA0c4=',
        '44 base64 characters with + and = (the shape openssl rand -base64 32 prints)',
      ],
    ]
    for (const [key, why] of strong) {
      it(`accepts ${why}`, () => assert.deepEqual(loadConfig({ API_KEYS: key }, '/w').apiKeys, [entry(key)]))
    }
    it('estimates entropy as documented: 0 bits for a repeat, 16 for abab…, about 5 for 0123456789abcdef', () => {
      assert.equal(estimateEntropyBits('aaaaaaaaaaaaaaaa'), 0)
      assert.equal(Math.round(estimateEntropyBits('abababababababab')), 15)
      assert.ok(estimateEntropyBits('0123456789abcdef') < 6)
      assert.ok(estimateEntropyBits(generateApiKey().key) > 150)
    })
  })

  describe('API_KEYS entries may carry a scope and a rate limit: KEY[:scope=read|write][:rate-limit=N]', () => {
    const keysOf = (value: string) => loadConfig({ API_KEYS: value }, '/w').apiKeys

    it('reads each parameter, in either order, and gives an entry without them scope write and the default limit', () => {
      assert.deepEqual(keysOf(`${KEY_1}:scope=read, ${KEY_2}:rate-limit=600:scope=write,${KEY_1}x:rate-limit=0`), [
        entry(KEY_1, { scope: 'read' }),
        entry(KEY_2, { scope: 'write', rateLimit: 600 }),
        entry(`${KEY_1}x`, { rateLimit: 0 }),
      ])
      assert.deepEqual(keysOf(`${KEY_1}:scope=read:rate-limit=${MAX_RATE_LIMIT_PER_MINUTE}`), [
        entry(KEY_1, { scope: 'read', rateLimit: MAX_RATE_LIMIT_PER_MINUTE }),
      ])
    })

    it('keeps a key ending in = padding apart from its parameters (a colon is never part of a key)', () => {
      const padded = '3q2+7w8Zr0Q9YbVxk1mN4tUuP5sE6dJ7fH8gK9lA0c4='
      assert.deepEqual(keysOf(`${padded}:scope=read`), [entry(padded, { scope: 'read' })])
    })

    const refused: Array<[string, string, RegExp]> = [
      ['an unknown scope', `${KEY_1},${KEY_2}:scope=admin`, /^API_KEYS entry 2: scope must be read or write\.$/],
      ['a scope in upper case', `${KEY_1}:scope=READ`, /^API_KEYS entry 1: scope must be read or write\.$/],
      ['an empty scope', `${KEY_1}:scope=`, /^API_KEYS entry 1: scope must be read or write\.$/],
      ['a negative rate limit', `${KEY_1}:rate-limit=-1`, /^API_KEYS entry 1: rate-limit must be an integer from 0 to 10000000 /],
      ['a rate limit over the maximum', `${KEY_1}:rate-limit=10000001`, /^API_KEYS entry 1: rate-limit must be an integer/],
      ['a fractional rate limit', `${KEY_1}:rate-limit=1.5`, /^API_KEYS entry 1: rate-limit must be an integer/],
      [
        'an unknown parameter',
        `${KEY_1}:role=read`,
        /^API_KEYS entry 1 has a parameter that is not usable: after a key, each parameter is :scope=read\|write or :rate-limit=N/,
      ],
      ['a parameter without =', `${KEY_1}:read`, /^API_KEYS entry 1 has a parameter that is not usable/],
      [
        'a parameter given twice',
        `${KEY_1}:scope=read:scope=write`,
        /^API_KEYS entry 1 has a parameter that is not usable: .*at most once/,
      ],
      ['an empty parameter', `${KEY_1}:`, /^API_KEYS entry 1 has a parameter that is not usable/],
      ['parameters without a key', ':scope=read', /^API_KEYS entry 1 is not usable: each key must be/],
      ['a weak key with a scope', 'aaaaaaaaaaaaaaaaaaaa:scope=read', /^API_KEYS entry 1 is not usable: .*40\+ bits/],
      [
        'a key listed again to make it read-only',
        `${KEY_1},${KEY_2},${KEY_1}:scope=read`,
        /^API_KEYS entries 1 and 3 are the same key: list each key once, with all its parameters/,
      ],
      [
        'a key listed twice alike',
        `${KEY_2}, ${KEY_1}:rate-limit=2 ,${KEY_1}:rate-limit=2`,
        /^API_KEYS entries 2 and 3 are the same key/,
      ],
    ]
    for (const [what, value, message] of refused) {
      it(`refuses ${what}, naming the entry, never echoing the key or the parameter`, () => {
        assert.throws(
          () => loadConfig({ API_KEYS: value }, '/w'),
          (error: unknown) => {
            assert.ok(error instanceof ConfigError && error.variable === 'API_KEYS')
            assert.match(error.message, message)
            assert.ok(!error.message.includes(KEY_1) && !error.message.includes('admin') && !error.message.includes('role'))
            return true
          },
        )
      })
    }

    it('refuses a secret that holds a colon without echoing any part of it', () => {
      const secret = 'Zr0Q9YbVxk1mN4tU:uP5sE6dJ7fH8gK9lA0c4'
      assert.throws(
        () => loadConfig({ API_KEYS: secret }, '/w'),
        (error: unknown) =>
          error instanceof ConfigError &&
          !error.message.includes('Zr0Q9YbVxk1mN4tU') &&
          !error.message.includes('uP5sE6dJ7fH8gK9lA0c4'),
      )
    })
  })

  describe('secrets from files (VARIABLE_FILE, as Docker and Kubernetes mount them)', () => {
    const dir = tempDir()
    after(() => dir.remove())
    const file = (name: string, content: string) => {
      const path = join(dir.path, name)
      writeFileSync(path, content)
      return path
    }

    it('reads API_KEYS_FILE and DATABASE_URL_FILE, without the trailing line break', () => {
      const config = loadConfig(
        {
          API_KEYS_FILE: file('keys', `${KEY_1},${KEY_2}\n`),
          DATABASE_URL_FILE: file('url', 'postgres://app:s3cr3t@db:5432/pets\r\n'),
        },
        '/w',
      )
      assert.deepEqual(config.apiKeys, [entry(KEY_1), entry(KEY_2)])
      assert.equal(config.database.dialect === 'postgres' && config.database.url, 'postgres://app:s3cr3t@db:5432/pets')
    })

    it('reads COPY_FROM_URL_FILE and COPY_TO_URL_FILE for copy, and DATABASE_URL_FILE as its default source', () => {
      const to = file('to', 'postgres://app:s3cr3t@db/target\n')
      assert.deepEqual(loadCopyUrls({}, { COPY_FROM_URL_FILE: file('from', 'sqlite:a.db\n'), COPY_TO_URL_FILE: to }), {
        from: { name: 'COPY_FROM_URL', url: 'sqlite:a.db' },
        to: { name: 'COPY_TO_URL', url: 'postgres://app:s3cr3t@db/target' },
      })
      assert.deepEqual(loadCopyUrls({}, { DATABASE_URL_FILE: file('db', 'sqlite:b.db'), COPY_TO_URL_FILE: to }).from, {
        name: 'DATABASE_URL',
        url: 'sqlite:b.db',
      })
    })

    it('reads no further source for copy than it needs: an unreadable DATABASE_URL_FILE does not matter with --from', () => {
      const env = { DATABASE_URL_FILE: join(dir.path, 'no-such-file'), COPY_TO_URL: 'sqlite:b.db' }
      assert.deepEqual(loadCopyUrls({ from: 'sqlite:a.db' }, env).from, { name: '--from', url: 'sqlite:a.db' })
      assert.throws(
        () => loadCopyUrls({}, env),
        (error: unknown) => error instanceof ConfigError && error.variable === 'DATABASE_URL_FILE',
      )
    })

    it('reads DATABASE_REPLICA_URLS_FILE, without the trailing line break', () => {
      const replicas = 'postgres://app:s3cr3t@replica-1/pets,postgres://app:s3cr3t@replica-2/pets'
      const config = loadConfig(
        { DATABASE_URL: 'postgres://app:s3cr3t@db/pets', DATABASE_REPLICA_URLS_FILE: file('replicas', `${replicas}\n`) },
        '/w',
      )
      assert.deepEqual(config.databaseReplicaUrls, replicas.split(','))
    })

    for (const name of ['API_KEYS', 'DATABASE_URL', 'COPY_TO_URL']) {
      it(`refuses ${name} and ${name}_FILE both set, naming both`, () => {
        const path = file(`${name}.both`, KEY_1)
        assert.throws(
          () =>
            name === 'COPY_TO_URL'
              ? loadCopyUrls({}, { [name]: 'sqlite:x', [`${name}_FILE`]: path })
              : loadConfig({ [name]: KEY_2, [`${name}_FILE`]: path }, '/w'),
          (error: unknown) =>
            error instanceof ConfigError &&
            error.message.startsWith(`${name} and ${name}_FILE are both set`) &&
            !error.message.includes(KEY_1) &&
            !error.message.includes(KEY_2),
        )
      })
    }

    it('names the variable and the file, never its content, when the file cannot be read', () => {
      const missing = join(dir.path, 'no-such-file')
      assert.throws(
        () => loadConfig({ DATABASE_URL_FILE: missing }, '/w'),
        (error: unknown) =>
          error instanceof ConfigError &&
          error.variable === 'DATABASE_URL_FILE' &&
          error.message.includes('(ENOENT)') &&
          error.message.includes(missing),
      )
      const unreadable = file('unreadable', 'postgres://app:s3cr3t@db/x')
      chmodSync(unreadable, 0o000)
      if (process.getuid?.() !== 0) {
        assert.throws(
          () => loadConfig({ DATABASE_URL_FILE: unreadable }, '/w'),
          (error: unknown) =>
            error instanceof ConfigError && /\(EACCES\)/.test(error.message) && !error.message.includes('s3cr3t'),
        )
      }
      assert.throws(
        () => loadConfig({ API_KEYS_FILE: file('empty', '\n') }, '/w'),
        (error: unknown) =>
          error instanceof ConfigError && error.variable === 'API_KEYS_FILE' && /empty file/.test(error.message),
      )
    })

    it('refuses a weak key read from API_KEYS_FILE as it would from API_KEYS', () => {
      assert.throws(
        () => loadConfig({ API_KEYS_FILE: file('weak', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaa\n') }, '/w'),
        (error: unknown) => error instanceof ConfigError && error.variable === 'API_KEYS' && !error.message.includes('aaaa'),
      )
    })
  })
})
