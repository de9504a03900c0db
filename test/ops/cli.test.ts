// The built operator CLI as a child process: help, migrate, keys create/list/revoke, configuration errors, the first key and revocation.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { setTimeout as delay } from 'node:timers/promises'
import Database from 'better-sqlite3'
import pg from 'pg'
import { describeEachDatabase, freshDatabase, type TestDatabase, tempDir } from '../../scripts/lib/test-server.js'
import { DEFAULT_METRICS_PORT } from '../../src/config.js'
import { KEY_REFRESH_MS } from '../../src/http/pipeline/key-cache.js'
import { MIGRATIONS } from '../../src/store/migrations/index.js'
import {
  assertBuilt,
  type CliResult,
  cliEnv,
  GENERATED_KEY,
  jsonLines,
  killLeftovers,
  runCli,
  startServe,
} from '../support/cli-process.js'

/** A key accepted by API_KEYS (16+ b64token characters). */
const CONFIGURED_KEY = 'cfg-key_0123456789ABCDEFabcdef.~+/'
const ANY_GENERATED_KEY = /ask_[A-Za-z0-9_-]{43}/
const STACK_FRAME = /^\s+at /m

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex')

/** A temporary folder with a DATABASE_URL in it; `remove` deletes both. */
function tempDatabase() {
  const dir = tempDir()
  const path = join(dir.path, 'x.db')
  return { ...dir, dbPath: path, url: `sqlite:${path}` }
}

/** `promise`, marked handled so that it may reject before a test awaits it. */
function settled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {})
  return promise
}

/** Asserts a failed command: non-zero exit, exactly one stderr line matching `line`, no stack trace. */
function assertOneLineFailure(result: CliResult, line: RegExp): void {
  assert.notEqual(result.code, 0, `expected a failure, got exit 0; stdout: ${result.stdout}`)
  assert.equal(result.signal, null)
  const lines = result.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, `expected one stderr line, got:\n${result.stderr}`)
  assert.match(lines[0] ?? '', line)
  assert.doesNotMatch(result.stderr, STACK_FRAME)
}

/** Rows of `keys list` as objects keyed by its header (ID, NAME, PREFIX, SCOPE, RATE-LIMIT, CREATED, REVOKED). */
function parseKeyList(stdout: string): Array<Record<string, string>> {
  const [header = '', ...rows] = stdout.trimEnd().split('\n')
  const columns = header.split(/\s{2,}/)
  assert.deepEqual(columns, ['ID', 'NAME', 'PREFIX', 'SCOPE', 'RATE-LIMIT', 'CREATED', 'REVOKED'])
  return rows.map((row) => Object.fromEntries(row.split(/\s{2,}/).map((cell, i) => [columns[i] ?? `extra${i}`, cell])))
}

/** The key printed by `keys create`, and its id; asserts it is printed exactly once. */
function parseCreatedKey(result: CliResult): { id: string; key: string } {
  assert.equal(result.code, 0, result.stderr)
  const lines = result.stdout.trimEnd().split('\n')
  assert.equal(lines.length, 2, result.stdout)
  const id =
    /^Created API key (\d+) \(.+, scope (read|write), rate limit (default|none|\d+\/min)\)\. Store it now; it is not shown again:$/.exec(
      lines[0] ?? '',
    )?.[1]
  assert.ok(id, `no id in: ${lines[0]}`)
  const key = lines[1] ?? ''
  assert.match(key, GENERATED_KEY)
  assert.equal(result.stdout.split(key).length - 1, 1, 'the key is printed exactly once')
  return { id, key }
}

/** Every byte of the SQLite file(s) in `dir` and their -wal/-shm companions, by file name. */
function databaseFiles(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>()
  for (const name of readdirSync(dir)) if (/\.db(-wal|-shm)?$/.test(name)) files.set(name, readFileSync(join(dir, name)))
  return files
}

function assertNotInFiles(files: Map<string, Buffer>, secret: string): void {
  for (const [name, bytes] of files) assert.equal(bytes.includes(secret), false, `${name} contains the key text`)
}

/** A fresh database of that kind for one test: its DATABASE_URL, its folder, and `cleanup`. */
async function testDatabase(database: TestDatabase) {
  const dir = tempDir()
  const fresh = await freshDatabase(database, dir.path)
  return {
    database,
    url: fresh.url,
    dir: dir.path,
    async cleanup() {
      await fresh.drop()
      dir.remove()
    },
  }
}

type TestDb = Awaited<ReturnType<typeof testDatabase>>

/** Runs one read-only query against the test database, whichever kind it is; values as the driver returns them. */
async function query(db: TestDb, text: string): Promise<Array<Record<string, unknown>>> {
  if (db.database === 'sqlite') {
    const handle = new Database(db.url.slice('sqlite:'.length), { readonly: true, fileMustExist: true })
    try {
      return handle.prepare(text).all() as Array<Record<string, unknown>>
    } finally {
      handle.close()
    }
  }
  const client = new pg.Client({ connectionString: db.url })
  await client.connect()
  try {
    return (await client.query(text)).rows
  } finally {
    await client.end()
  }
}

/** Runs one writing statement against the test database (to stage data older rules let in). */
async function execute(db: TestDb, text: string): Promise<void> {
  if (db.database === 'sqlite') {
    const handle = new Database(db.url.slice('sqlite:'.length), { fileMustExist: true })
    try {
      handle.exec(text)
    } finally {
      handle.close()
    }
    return
  }
  const client = new pg.Client({ connectionString: db.url })
  await client.connect()
  try {
    await client.query(text)
  } finally {
    await client.end()
  }
}

function readApiKeyRows(db: TestDb): Promise<Array<Record<string, unknown>>> {
  return query(db, 'select name, prefix, hash, revoked_at, scope, rate_limit from api_keys order by id')
}

function get(origin: string, key: string | undefined, path = '/v1/pets'): Promise<Response> {
  return fetch(origin + path, { headers: key === undefined ? {} : { authorization: `Bearer ${key}` } })
}

describe('animal-store CLI', () => {
  before(() => assertBuilt())
  after(() => killLeftovers())

  describe('--help', () => {
    const cases: Array<[string[], RegExp, string[]]> = [
      [
        [],
        /^Usage: animal-store \[options\] \[command\]\n/,
        ['serve', 'migrate', 'keys', 'copy', 'backup', 'restore', 'DATABASE_URL', 'API_KEYS'],
      ],
      [['serve'], /^Usage: animal-store serve \[options\]\n/, ['run the HTTP service']],
      [['migrate'], /^Usage: animal-store migrate \[options\]\n/, ['apply pending database migrations']],
      [['keys'], /^Usage: animal-store keys \[options\] \[command\]\n/, ['create', 'list', 'revoke <id>']],
      [
        ['keys', 'create'],
        /^Usage: animal-store keys create \[options\]\n/,
        ['--name <name>', '--scope <scope>', 'read or write', '--rate-limit <n>'],
      ],
      [['keys', 'list'], /^Usage: animal-store keys list \[options\]\n/, ['scope, rate limit', 'never the key']],
      [['keys', 'revoke'], /^Usage: animal-store keys revoke \[options\] <id>\n/, ['the key id']],
      [['copy'], /^Usage: animal-store copy \[options\]\n/, ['--from <url>', '--to <url>', '--replace']],
      [['backup'], /^Usage: animal-store backup \[options\]\n/, ['--to <file>', 'never overwritten', 'pg_dump']],
      [['restore'], /^Usage: animal-store restore \[options\]\n/, ['--from <file>', '--force', 'pg_restore']],
    ]
    // The commands are independent: start them all at once, then check each in its own test.
    const runs = new Map<string, Promise<CliResult>>()
    before(() => {
      for (const [command] of cases) runs.set(command.join(' '), settled(runCli([...command, '--help'], cliEnv({}))))
    })
    for (const [command, usage, mentions] of cases) {
      it(`prints help for ${['animal-store', ...command].join(' ')} and exits 0`, async () => {
        const result = await (runs.get(command.join(' ')) ?? Promise.reject(new Error('not started')))
        assert.equal(result.code, 0, result.stderr)
        assert.equal(result.stderr, '')
        assert.match(result.stdout, usage)
        for (const text of mentions) assert.ok(result.stdout.includes(text), `help lacks "${text}":\n${result.stdout}`)
      })
    }
  })

  describe('bad configuration stops start-up with exit code 1, naming the variable', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['PORT', 'abc', /^animal-store: PORT must be an integer from 0 to 65535\.$/],
      ['PORT', '70000', /^animal-store: PORT must be an integer from 0 to 65535\.$/],
      ['LOG_LEVEL', 'loud', /^animal-store: LOG_LEVEL must be one of /],
      ['DATABASE_URL', 'mysql://x', /^animal-store: DATABASE_URL must be sqlite:PATH/],
      ['DATABASE_URL', 'postgres://user:s3cretpw@[::1', /^animal-store: DATABASE_URL is not a valid postgres:\/\/ URL/],
      ['DATABASE_POOL_MAX', '0', /^animal-store: DATABASE_POOL_MAX must be an integer from 1 to /],
      ['PUBLIC_URL', 'ftp://x', /^animal-store: PUBLIC_URL must be an absolute http\(s\) URL ending in \/v1/],
      ['API_KEYS', 'short', /^animal-store: API_KEYS entry 1 is not usable/],
      ['API_KEYS', `${CONFIGURED_KEY},s3cret!Value-that-is-long-enough`, /^animal-store: API_KEYS entry 2 is not usable/],
      ['API_KEYS', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', /^animal-store: API_KEYS entry 1 is not usable/],
      ['API_KEYS', `${CONFIGURED_KEY}:scope=admin`, /^animal-store: API_KEYS entry 1: scope must be read or write\.$/],
      [
        'API_KEYS',
        `${CONFIGURED_KEY}:rate-limit=lots`,
        /^animal-store: API_KEYS entry 1: rate-limit must be an integer from 0 to 10000000 /,
      ],
      [
        'API_KEYS',
        `${CONFIGURED_KEY}:scope=read:role=admin`,
        /^animal-store: API_KEYS entry 1 has a parameter that is not usable: /,
      ],
      ['API_KEYS_FILE', '/nonexistent/s3cret-keys', /^animal-store: API_KEYS_FILE names a file that cannot be read \(ENOENT\)/],
    ]
    // Each case has its own folder; all start at once, then each is checked in its own test.
    const runs: Array<{ db: ReturnType<typeof tempDatabase>; result: Promise<CliResult> }> = []
    before(() => {
      for (const [variable, value] of cases) {
        const db = tempDatabase()
        const env = cliEnv({ PORT: '0', HOST: '127.0.0.1', DATABASE_URL: db.url, [variable]: value })
        runs.push({ db, result: settled(runCli(['serve'], env)) })
      }
    })
    after(() => {
      for (const { db } of runs) db.remove()
    })
    cases.forEach(([variable, value, message], index) => {
      it(`${variable}=${value}`, async () => {
        const run = runs[index]
        assert.ok(run, 'not started')
        const result = await run.result
        assert.equal(result.code, 1, `exit ${result.code}; stdout: ${result.stdout}; stderr: ${result.stderr}`)
        assertOneLineFailure(result, message)
        assert.equal(result.stdout, '', 'nothing is started, logged or printed')
        assert.equal(existsSync(run.db.dbPath), false, 'no database is created')
        const output = result.stdout + result.stderr
        if (variable === 'API_KEYS')
          // Neither a key nor a parameter it was given (`scope=read` is in the message's own example).
          for (const part of value.split(/[,:]/).filter((part) => part !== 'scope=read'))
            assert.equal(output.includes(part), false, `echoes ${part}`)
        if (variable !== 'API_KEYS_FILE') assert.equal(output.includes('s3cret'), false, 'the output echoes a secret')
      })
    })

    it('exits 1 with one line, without the password, when DATABASE_URL names an unreachable PostgreSQL (DATABASE_START_WAIT_MS=0)', async () => {
      const env = { PORT: '0', DATABASE_URL: 'postgres://user:s3cretpw@127.0.0.1:1/pets', DATABASE_START_WAIT_MS: '0' }
      const result = await runCli(['serve'], cliEnv(env))
      assert.equal(result.code, 1)
      assertOneLineFailure(result, /^animal-store: .*127\.0\.0\.1:1\b/)
      assert.doesNotMatch(result.stdout, /listening on/)
      assert.equal((result.stdout + result.stderr).includes('s3cretpw'), false, 'the output echoes the password')
    })

    it('waits DATABASE_START_WAIT_MS for an unreachable PostgreSQL, logging each try without the password, then exits 1', async () => {
      const env = { PORT: '0', DATABASE_URL: 'postgres://user:s3cretpw@127.0.0.1:1/pets', DATABASE_START_WAIT_MS: '1500' }
      const started = Date.now()
      const result = await runCli(['serve'], cliEnv(env))
      assert.equal(result.code, 1)
      assert.ok(Date.now() - started >= 1000, 'it waited')
      const tries = jsonLines(result.stdout).filter((line) =>
        /the database is unavailable; starting once it answers/.test(String(line.msg)),
      )
      assert.ok(tries.length >= 2, `${tries.length} tries logged`)
      assert.match(result.stderr, /^animal-store: .*127\.0\.0\.1:1\b/m)
      assert.equal((result.stdout + result.stderr).includes('s3cretpw'), false, 'the output echoes the password')
    })
  })

  describe('migrate', () => {
    it('applies every migration to a fresh SQLite file, then reports it is up to date', async () => {
      const db = tempDatabase()
      try {
        const first = await runCli(['migrate'], cliEnv({ DATABASE_URL: db.url }))
        assert.equal(first.code, 0, first.stderr)
        assert.equal(first.stdout, `Applied migrations: ${Object.keys(MIGRATIONS).sort().join(', ')}\n`)
        assert.equal(first.stderr, '')
        const handle = new Database(db.dbPath, { readonly: true, fileMustExist: true })
        const tables = handle
          .prepare("select name from sqlite_master where type = 'table' and name in ('pets', 'api_keys') order by name")
          .pluck()
          .all()
        handle.close()
        assert.deepEqual(tables, ['api_keys', 'pets'])

        const second = await runCli(['migrate'], cliEnv({ DATABASE_URL: db.url }))
        assert.equal(second.code, 0, second.stderr)
        assert.equal(second.stdout, 'Database schema is up to date.\n')
      } finally {
        db.remove()
      }
    })

    it('four processes migrating one new SQLite file at once: one applies every migration, the others find them applied, five times', async () => {
      for (let round = 0; round < 5; round++) {
        const db = tempDatabase()
        try {
          const results = await Promise.all([1, 2, 3, 4].map(() => runCli(['migrate'], cliEnv({ DATABASE_URL: db.url }))))
          assert.deepEqual(
            results.map((result) => [result.code, result.stderr]),
            results.map(() => [0, '']),
          )
          assert.deepEqual(results.map((result) => result.stdout).sort(), [
            `Applied migrations: ${Object.keys(MIGRATIONS).sort().join(', ')}\n`,
            ...Array(3).fill('Database schema is up to date.\n'),
          ])
        } finally {
          db.remove()
        }
      }
    })
  })

  describeEachDatabase('keys', (database) => {
    it('keys create --name ci prints a new key once; keys list shows its id, name and prefix, never the key', async () => {
      const db = await testDatabase(database)
      try {
        const env = cliEnv({ DATABASE_URL: db.url })
        const created = parseCreatedKey(await runCli(['keys', 'create', '--name', 'ci'], env))

        const list = await runCli(['keys', 'list'], env)
        assert.equal(list.code, 0, list.stderr)
        assert.equal(list.stdout.includes(created.key), false, 'keys list prints the key')
        assert.equal(list.stdout.includes(created.key.slice(12)), false, 'keys list prints the secret part of the key')
        const rows = parseKeyList(list.stdout)
        assert.equal(rows.length, 1)
        assert.equal(rows[0]?.ID, created.id)
        assert.equal(rows[0]?.NAME, 'ci')
        assert.equal(rows[0]?.PREFIX, `${created.key.slice(0, 12)}…`)
        assert.ok(!Number.isNaN(Date.parse(rows[0]?.CREATED ?? '')), `CREATED is not a time: ${rows[0]?.CREATED}`)
        assert.equal(rows[0]?.REVOKED, '-')

        assert.equal(rows[0]?.SCOPE, 'write', 'a key may create unless told otherwise')
        assert.equal(rows[0]?.['RATE-LIMIT'], 'default')
        assert.deepEqual(await readApiKeyRows(db), [
          {
            name: 'ci',
            prefix: created.key.slice(0, 12),
            hash: sha256(created.key),
            revoked_at: null,
            scope: 'write',
            rate_limit: null,
          },
        ])
      } finally {
        await db.cleanup()
      }
    })

    it('keys create --scope read --rate-limit 3 makes a key serve honours: lists 200, creates 403, its own limit in the headers', async () => {
      const db = await testDatabase(database)
      try {
        const env = cliEnv({ DATABASE_URL: db.url, RATE_LIMIT_PER_MINUTE: '1000' })
        const page = parseCreatedKey(
          await runCli(['keys', 'create', '--name', 'page', '--scope', 'read', '--rate-limit', '3'], env),
        )
        const backend = parseCreatedKey(await runCli(['keys', 'create', '--name', 'backend', '--scope', 'write'], env))
        const loader = parseCreatedKey(await runCli(['keys', 'create', '--name', 'loader', '--rate-limit', '0'], env))
        const rows = parseKeyList((await runCli(['keys', 'list'], env)).stdout)
        assert.deepEqual(
          rows.map((row) => [row.ID, row.NAME, row.SCOPE, row['RATE-LIMIT']]),
          [
            [page.id, 'page', 'read', '3/min'],
            [backend.id, 'backend', 'write', 'default'],
            [loader.id, 'loader', 'write', 'none'],
          ],
        )
        const server = await startServe(env)
        try {
          const listed = await get(server.origin, page.key)
          assert.equal(listed.status, 200)
          assert.equal(listed.headers.get('ratelimit-policy'), 'default;q=3;w=60')
          const post = (key: string) =>
            fetch(`${server.origin}/v1/pets`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ name: 'Rex', categoryId: 1 }),
            })
          const refused = await post(page.key)
          assert.equal(refused.status, 403)
          assert.equal(
            refused.headers.get('www-authenticate'),
            'Bearer realm="animal-store", error="insufficient_scope", scope="write"',
          )
          assert.equal(((await refused.json()) as { code: string }).code, 'insufficient_scope')
          const created = await post(backend.key)
          assert.equal(created.status, 201)
          assert.equal(created.headers.get('ratelimit-policy'), 'default;q=1000;w=60')
          assert.equal((await get(server.origin, page.key)).status, 200, 'the third of 3')
          assert.equal((await get(server.origin, page.key)).status, 429, 'past its own limit')
          const unlimited = await get(server.origin, loader.key)
          assert.equal(unlimited.status, 200)
          assert.equal(unlimited.headers.get('ratelimit'), null)
        } finally {
          await server.stop()
        }
      } finally {
        await db.cleanup()
      }
    })

    it('keys revoke ID marks the key revoked, keys list shows when, and revoking again changes nothing', async () => {
      const db = await testDatabase(database)
      try {
        const env = cliEnv({ DATABASE_URL: db.url })
        const kept = parseCreatedKey(await runCli(['keys', 'create', '--name', 'kept'], env))
        const revoked = parseCreatedKey(await runCli(['keys', 'create', '--name', 'ci'], env))

        const revoke = await runCli(['keys', 'revoke', revoked.id], env)
        assert.equal(revoke.code, 0, revoke.stderr)
        const at = new RegExp(`^Revoked API key ${revoked.id} \\(ci\\) at (\\S+)\\.\\n$`).exec(revoke.stdout)?.[1]
        assert.ok(at && !Number.isNaN(Date.parse(at)), revoke.stdout)

        const rows = parseKeyList((await runCli(['keys', 'list'], env)).stdout)
        assert.deepEqual(
          rows.map((row) => [row.ID, row.NAME, row.REVOKED]),
          [
            [kept.id, 'kept', '-'],
            [revoked.id, 'ci', at],
          ],
        )

        const again = await runCli(['keys', 'revoke', revoked.id], env)
        assert.equal(again.code, 0, again.stderr)
        assert.equal(again.stdout, revoke.stdout, 'a second revoke keeps the first revocation time')
      } finally {
        await db.cleanup()
      }
    })

    const failures: Array<[string, string[], RegExp]> = [
      ['revoking an unknown id', ['keys', 'revoke', '999'], /^animal-store: no API key has id 999$/],
      [
        'revoking a non-numeric id',
        ['keys', 'revoke', 'abc'],
        /^animal-store: key id must be a positive integer as shown by `keys list`, not "abc"$/,
      ],
      ['revoking id 0', ['keys', 'revoke', '0'], /^animal-store: key id must be a positive integer/],
      ['keys create gets an empty --name', ['keys', 'create', '--name', ''], /^animal-store: --name must not be empty$/],
      [
        'keys create gets a --name with a line break (it would forge a row of keys list)',
        ['keys', 'create', '--name', 'ci\n99  forged  ask_AAAAAAAA…'],
        /^animal-store: --name must be 1 to 100 printable characters \(no line breaks, tabs or other control characters\)$/,
      ],
      [
        'keys create gets a --name with a terminal escape',
        ['keys', 'create', '--name', '\u001b[2Jci'],
        /^animal-store: --name must be 1 to 100 printable/,
      ],
      [
        'keys create gets a --name of 101 characters',
        ['keys', 'create', '--name', 'n'.repeat(101)],
        /^animal-store: --name must be 1 to 100 printable/,
      ],
      [
        'keys create gets an unknown --scope',
        ['keys', 'create', '--name', 'x', '--scope', 'admin'],
        /^animal-store: --scope must be read or write, not "admin"$/,
      ],
      [
        'keys create gets --scope in upper case',
        ['keys', 'create', '--name', 'x', '--scope', 'READ'],
        /^animal-store: --scope must be read or write, not "READ"$/,
      ],
      [
        'keys create gets an empty --scope',
        ['keys', 'create', '--name', 'x', '--scope', ''],
        /^animal-store: --scope must be read or write, not ""$/,
      ],
      [
        'keys create gets a negative --rate-limit',
        ['keys', 'create', '--name', 'x', '--rate-limit=-5'],
        /^animal-store: --rate-limit must be an integer from 0 to 10000000 \(requests per minute; 0 = no limit\), not "-5"$/,
      ],
      [
        'keys create gets a --rate-limit over the maximum',
        ['keys', 'create', '--name', 'x', '--rate-limit', '10000001'],
        /^animal-store: --rate-limit must be an integer from 0 to 10000000 .*, not "10000001"$/,
      ],
      [
        'keys create gets a fractional --rate-limit',
        ['keys', 'create', '--name', 'x', '--rate-limit', '1.5'],
        /^animal-store: --rate-limit must be .*, not "1\.5"$/,
      ],
      [
        'keys create gets a --rate-limit that is not a number',
        ['keys', 'create', '--name', 'x', '--rate-limit', 'lots'],
        /^animal-store: --rate-limit must be .*, not "lots"$/,
      ],
    ]
    for (const [when, args, line] of failures) {
      it(`exits non-zero with one "animal-store:" line on stderr when ${when}`, async () => {
        const db = await testDatabase(database)
        try {
          const result = await runCli(args, cliEnv({ DATABASE_URL: db.url }))
          assertOneLineFailure(result, line)
          assert.doesNotMatch(result.stdout, ANY_GENERATED_KEY)
          assert.deepEqual(await readApiKeyRows(db).catch(() => []), [], 'no key is stored')
        } finally {
          await db.cleanup()
        }
      })
    }

    it('exits non-zero with commander’s error line and no stack trace when keys create lacks --name', async () => {
      const db = await testDatabase(database)
      try {
        const result = await runCli(['keys', 'create'], cliEnv({ DATABASE_URL: db.url }))
        assert.notEqual(result.code, 0)
        assert.equal(result.stderr.split('\n')[0], "error: required option '--name <name>' not specified")
        assert.doesNotMatch(result.stderr, STACK_FRAME)
        assert.equal(result.stdout, '')
        assert.deepEqual(await readApiKeyRows(db).catch(() => []), [], 'no key is stored')
      } finally {
        await db.cleanup()
      }
    })

    it('keys create stores a name of 100 printable characters, any script, as given', async () => {
      const db = await testDatabase(database)
      try {
        const name = `Équipe 名前 🐕 ${'x'.repeat(88)}`
        assert.equal([...name].length, 100)
        parseCreatedKey(await runCli(['keys', 'create', '--name', name], cliEnv({ DATABASE_URL: db.url })))
        assert.deepEqual(
          (await readApiKeyRows(db)).map((row) => row.name),
          [name],
        )
      } finally {
        await db.cleanup()
      }
    })

    it('keys list and keys revoke escape a name stored before the rule, so it cannot forge rows or send escapes', async () => {
      const db = await testDatabase(database)
      try {
        const env = cliEnv({ DATABASE_URL: db.url })
        const created = parseCreatedKey(await runCli(['keys', 'create', '--name', 'placeholder'], env))
        const stored = 'ci\n99  forged  ask_AAAAAAAA…  2030-01-01T00:00:00.000Z  -\u001b[2J\u202e'
        await execute(db, `update api_keys set name = '${stored}' where id = ${created.id}`)
        const list = await runCli(['keys', 'list'], env)
        assert.equal(list.code, 0, list.stderr)
        assert.equal(list.stdout.trimEnd().split('\n').length, 2, `one header and one row:\n${list.stdout}`)
        assert.equal(parseKeyList(list.stdout)[0]?.ID, created.id)
        assert.ok(list.stdout.includes('ci\\u{a}99'), list.stdout)
        assert.equal(
          ['\u001b', '\u202e'].some((raw) => list.stdout.includes(raw)),
          false,
          'a raw ESC or bidi override is printed',
        )
        const revoke = await runCli(['keys', 'revoke', created.id], env)
        assert.match(revoke.stdout, /^Revoked API key \d+ \(ci\\u\{a\}99 .*\\u\{1b\}\[2J\\u\{202e\}\) at \S+\.\n$/)
      } finally {
        await db.cleanup()
      }
    })

    it('names the id, not a driver error, when revoking an id beyond int64', async () => {
      const db = await testDatabase(database)
      try {
        const result = await runCli(['keys', 'revoke', '9999999999999999999'], cliEnv({ DATABASE_URL: db.url }))
        assertOneLineFailure(result, /^animal-store: (no API key has id|key id must be) .*9999999999999999999/)
      } finally {
        await db.cleanup()
      }
    })
  })

  describeEachDatabase('serve', (database) => {
    it('on first start creates a key, prints it once in a banner, and stores only its SHA-256 hash; a second start prints none', async (t) => {
      const db = await testDatabase(database)
      try {
        const env = cliEnv({ DATABASE_URL: db.url })
        const first = await startServe(env)
        let key = ''
        try {
          const keyLines = first
            .stdout()
            .split('\n')
            .map((line) => line.trim())
            .filter((line) => GENERATED_KEY.test(line))
          assert.equal(keyLines.length, 1, first.stdout())
          key = keyLines[0] ?? ''
          assert.match(first.stdout(), /not shown again/)
          // After the listening line, with the port it listens on (PORT=0 here), not the one asked for.
          const tryIt = await first.waitForLine(/^Try it: /)
          assert.equal(tryIt, `Try it:  curl -H "Authorization: Bearer ${key}" ${first.origin}/v1/pets`)
          assert.ok(first.stdout().indexOf('Animal Store listening on') < first.stdout().indexOf(tryIt))
          assert.equal(first.stderr(), '')

          const ok = await get(first.origin, key)
          assert.equal(ok.status, 200)
          assert.deepEqual(await ok.json(), [])
          assert.equal((await get(first.origin, undefined)).status, 401)

          if (database === 'sqlite') {
            const whileRunning = databaseFiles(db.dir)
            assert.ok(
              [...whileRunning.keys()].some((name) => name.endsWith('-wal')),
              `no WAL while running: ${[...whileRunning.keys()]}`,
            )
            assertNotInFiles(whileRunning, key)
            assertNotInFiles(whileRunning, key.slice(12))
          }
          assert.deepEqual(await first.stop('SIGTERM'), { code: 0, signal: null })
        } finally {
          first.kill()
        }

        if (database === 'sqlite') {
          const afterStop = databaseFiles(db.dir)
          t.diagnostic(`SQLite files checked after stopping: ${[...afterStop.keys()].join(', ')}`)
          assertNotInFiles(afterStop, key)
          assertNotInFiles(afterStop, key.slice(12))
        }
        assert.deepEqual(await readApiKeyRows(db), [
          { name: 'first-key', prefix: key.slice(0, 12), hash: sha256(key), revoked_at: null, scope: 'write', rate_limit: null },
        ])

        const second = await startServe(env)
        try {
          assert.doesNotMatch(second.stdout(), ANY_GENERATED_KEY)
          assert.doesNotMatch(second.stdout(), /not shown again/)
          assert.doesNotMatch(second.stdout(), /create one with/, 'no hint to create a key when one exists')
          assert.equal((await get(second.origin, key)).status, 200)
          assert.deepEqual(await second.stop('SIGTERM'), { code: 0, signal: null })
        } finally {
          second.kill()
        }
        assert.equal((await readApiKeyRows(db)).length, 1, 'the second start stores no key')
      } finally {
        await db.cleanup()
      }
    })

    for (const variable of ['API_KEYS', 'API_KEYS_FILE'] as const)
      it(`with ${variable} set and no stored key, creates and prints no key, and accepts the configured one`, async () => {
        const db = await testDatabase(database)
        const secrets = tempDir()
        try {
          const keysFile = join(secrets.path, 'api-keys')
          writeFileSync(keysFile, `${CONFIGURED_KEY}\n`)
          const server = await startServe(
            cliEnv({
              DATABASE_URL: db.url,
              ...(variable === 'API_KEYS' ? { API_KEYS: CONFIGURED_KEY } : { API_KEYS_FILE: keysFile }),
            }),
          )
          try {
            assert.doesNotMatch(server.stdout(), ANY_GENERATED_KEY)
            assert.doesNotMatch(server.stdout(), /not shown again/)
            assert.equal((await get(server.origin, CONFIGURED_KEY)).status, 200)
            const wrong = await get(server.origin, `${CONFIGURED_KEY}x`)
            assert.equal(wrong.status, 401)
            assert.equal(((await wrong.json()) as { code: string }).code, 'invalid_api_key')
            assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
            assert.equal(`${server.stdout()}${server.stderr()}`.includes(CONFIGURED_KEY), false, 'the key is printed or logged')
          } finally {
            server.kill()
          }
          assert.deepEqual(await readApiKeyRows(db), [])
        } finally {
          secrets.remove()
          await db.cleanup()
        }
      })

    it(`accepts a key created while it runs, and refuses it within KEY_REFRESH_MS (${KEY_REFRESH_MS} ms) of keys revoke`, async (t) => {
      const db = await testDatabase(database)
      try {
        const env = cliEnv({ DATABASE_URL: db.url, API_KEYS: CONFIGURED_KEY })
        const server = await startServe(env)
        try {
          const created = parseCreatedKey(await runCli(['keys', 'create', '--name', 'live'], env))
          assert.equal((await get(server.origin, created.key)).status, 200, 'a key created while the server runs is accepted')

          const revoke = await runCli(['keys', 'revoke', created.id], env)
          assert.equal(revoke.code, 0, revoke.stderr)
          const revokedAt = Date.now()
          const deadline = revokedAt + KEY_REFRESH_MS + 1500
          let refused: Response | undefined
          let accepted = 0
          while (Date.now() < deadline) {
            const response = await get(server.origin, created.key)
            if (response.status !== 200) {
              refused = response
              break
            }
            await response.arrayBuffer()
            accepted++
            await delay(20)
          }
          const observed = Date.now() - revokedAt
          t.diagnostic(`revocation took effect ${observed} ms after keys revoke exited (${accepted} requests accepted meanwhile)`)
          assert.ok(refused, `still accepted ${observed} ms after keys revoke`)
          assert.equal(refused.status, 401)
          assert.equal(((await refused.json()) as { code: string }).code, 'invalid_api_key')
          assert.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/)
          assert.equal((await get(server.origin, created.key)).status, 401, 'the refusal sticks')
          assert.equal((await get(server.origin, CONFIGURED_KEY)).status, 200, 'other keys still work')
          assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
        } finally {
          server.kill()
        }
      } finally {
        await db.cleanup()
      }
    })
  })

  describe('serve start-up failures [sqlite]', () => {
    /** A TCP listener on 127.0.0.1 holding a port; resolves to it and its port. */
    async function holdPort(): Promise<{ blocker: Server; port: number }> {
      const blocker = createServer()
      await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
      const address = blocker.address()
      return { blocker, port: typeof address === 'object' && address ? address.port : 0 }
    }

    for (const workers of ['1', '2']) {
      it(`exits 1 when the port is already in use (WORKERS=${workers})`, async () => {
        const db = tempDatabase()
        const { blocker, port } = await holdPort()
        try {
          const result = await runCli(['serve'], cliEnv({ DATABASE_URL: db.url, PORT: String(port), WORKERS: workers }))
          assert.match(result.stderr, /^animal-store: .*EADDRINUSE/m)
          assert.equal(result.code, 1)
        } finally {
          blocker.close()
          db.remove()
        }
      })
    }

    // The workers listen with SO_REUSEPORT, which alone would let a second instance join the port.
    it('exits 1 (EADDRINUSE) when another WORKERS=2 instance listens on the port, which serves on', async () => {
      const db = tempDatabase()
      const env = { DATABASE_URL: db.url, API_KEYS: CONFIGURED_KEY, WORKERS: '2' }
      const first = await startServe(cliEnv(env))
      try {
        const second = await runCli(['serve'], cliEnv({ ...env, PORT: String(first.port) }))
        assert.match(second.stderr, /^animal-store: .*EADDRINUSE/m)
        assert.equal(second.code, 1)
        const answers = await Promise.all(
          Array.from({ length: 8 }, () =>
            fetch(`${first.origin}/v1/pets`, { headers: { authorization: `Bearer ${CONFIGURED_KEY}`, connection: 'close' } }),
          ),
        )
        assert.deepEqual(
          answers.map((answer) => answer.status),
          Array(8).fill(200),
        )
      } finally {
        await first.stop()
        db.remove()
      }
    })

    for (const workers of ['1', '2']) {
      it(`exits 1 naming METRICS_PORT when the metrics port is already in use (WORKERS=${workers})`, async () => {
        const db = tempDatabase()
        const { blocker, port } = await holdPort()
        try {
          const result = await runCli(
            ['serve'],
            cliEnv({ DATABASE_URL: db.url, PORT: '0', METRICS_PORT: String(port), WORKERS: workers, API_KEYS: CONFIGURED_KEY }),
          )
          assertOneLineFailure(
            result,
            /^animal-store: the metrics listener cannot listen on 127\.0\.0\.1:\d+ \(EADDRINUSE\): set METRICS_PORT/,
          )
          assert.equal(result.code, 1)
        } finally {
          blocker.close()
          db.remove()
        }
      })
    }

    it('runs without metrics, warning, when METRICS_PORT is left at its default and that port is taken', async () => {
      const db = tempDatabase()
      // Hold the default port ourselves (unless something on this machine already does: taken either way).
      const blocker = createServer()
      await new Promise<void>((resolve) => {
        blocker.once('error', () => resolve())
        blocker.listen(DEFAULT_METRICS_PORT, '127.0.0.1', resolve)
      })
      try {
        const server = await startServe(cliEnv({ DATABASE_URL: db.url, METRICS_PORT: '', API_KEYS: CONFIGURED_KEY }))
        try {
          const response = await fetch(`${server.origin}/v1/pets`, { headers: { authorization: `Bearer ${CONFIGURED_KEY}` } })
          assert.equal(response.status, 200, 'the API is served')
          await server.waitForLine(/metrics are not served: the default METRICS_PORT is taken/, 5_000)
          assert.doesNotMatch(server.stdout(), /^Prometheus metrics on /m)
          assert.equal(server.metricsOrigin, undefined)
        } finally {
          await server.stop()
        }
      } finally {
        blocker.close()
        db.remove()
      }
    })

    it('shows the first key even when that first start cannot listen (it is stored by then)', async () => {
      const db = tempDatabase()
      const { blocker, port } = await holdPort()
      try {
        const failed = await runCli(['serve'], cliEnv({ DATABASE_URL: db.url, PORT: String(port) }))
        assert.match(failed.stderr, /EADDRINUSE/)
        const key = ANY_GENERATED_KEY.exec(failed.stdout)?.[0] ?? ''
        assert.ok(key, 'the failed first start showed the key it stored')
        blocker.close()
        const server = await startServe(cliEnv({ DATABASE_URL: db.url }))
        try {
          assert.doesNotMatch(server.stdout(), ANY_GENERATED_KEY, 'no second key is made')
          const response = await fetch(`${server.origin}/v1/pets`, { headers: { authorization: `Bearer ${key}` } })
          assert.equal(response.status, 200)
        } finally {
          server.kill()
        }
      } finally {
        blocker.close()
        db.remove()
      }
    })
  })
})
