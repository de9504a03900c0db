// `animal-store copy` through the built CLI: moving a store from SQLite to PostgreSQL (and back) with
// every row exact, identity sequences advanced, refusal and --replace, verification by checksums,
// copied keys that still authenticate, and 100,000 pets with their time and peak memory.
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { type Kysely, Migrator, sql } from 'kysely'
import { parse as parseLossless } from 'lossless-json'
import { createTestPostgresDatabase, TEST_DATABASES, tempDir } from '../../scripts/lib/test-server.js'
import { createKey } from '../../src/commands/keys.js'
import { type DatabaseConfig, openStore, type Store } from '../../src/store/index.js'
import { MIGRATIONS } from '../../src/store/migrations/index.js'
import { PET_COLUMNS, PET_MEMBERS } from '../../src/store/pet-columns.js'
import type { Database } from '../../src/store/tables.js'
import { assertBuilt, type CliResult, cliEnv, killLeftovers, runCli, startServe } from '../support/cli-process.js'

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const ABOVE_DOUBLE = 2n ** 53n + 1n
const STACK_FRAME = /^\s+at /m

/** Seeded pets: int64 edges, unicode and awkward text. */
const SEED_PETS = [
  { name: 'Rex', categoryId: 1n, status: 'available' },
  { name: 'Ünïcødé 🐕‍🦺 名前', categoryId: ABOVE_DOUBLE, status: 'pending' },
  { name: 'deleted later', categoryId: 2n, status: 'sold' },
  { name: 'min', categoryId: INT64_MIN, status: 'sold' },
  { name: 'max', categoryId: INT64_MAX, status: 'available' },
  { name: ' "quoted", tab\tand\nnewline ', categoryId: -1n, status: 'available' },
  { name: 'zero', categoryId: 0n, status: 'pending' },
] as const

/**
 * Every pet and key of `db` in id order, every column the table has (`select *`: none named here, so
 * a column a migration adds is compared too), every value as text (or null): what must match exactly.
 */
async function rowsAsText(db: Kysely<Database>) {
  const rows = async (table: 'pets' | 'api_keys') =>
    (await (db as Kysely<any>).selectFrom(table).selectAll().orderBy('id').execute()).map((row: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(row).map(([column, value]) => {
          assert.ok(value === null || ['string', 'bigint'].includes(typeof value), `${table}.${column}: ${typeof value}`)
          return [column, value === null ? null : String(value)]
        }),
      ),
    ) as Array<Record<string, string | null>>
  return { pets: await rows('pets'), apiKeys: await rows('api_keys') }
}

/** The checksum as the README documents it (`id`, then the other columns by name), computed here independently of src/store/copy.ts. */
function documentedChecksum(rows: Array<Record<string, string | null>>): string {
  const hash = createHash('sha256')
  for (const row of rows) {
    const columns = [
      'id',
      ...Object.keys(row)
        .filter((column) => column !== 'id')
        .sort(),
    ]
    hash.update(`${JSON.stringify(columns.map((column) => row[column]))}\n`)
  }
  return hash.digest('hex')
}

async function withStore<T>(config: DatabaseConfig, run: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore(config)
  try {
    await store.migrate()
    return await run(store)
  } finally {
    await store.close()
  }
}

const postgresConfig = (url: string): DatabaseConfig => ({ dialect: 'postgres', url, poolMax: 2, statementTimeoutMs: 10_000 })
const sqliteConfig = (path: string): DatabaseConfig => ({ dialect: 'sqlite', path })

/**
 * Seeds an SQLite file through the store API: SEED_PETS (one deleted, leaving a gap), one pet with an
 * explicit id above 2^53, a live key and a revoked one. Resolves to the live key.
 */
async function seedSmallStore(path: string): Promise<{ liveKey: string; revokedKey: string }> {
  return withStore(sqliteConfig(path), async (store) => {
    for (const pet of SEED_PETS) await store.pets.insertPet(pet)
    await store.db.deleteFrom('pets').where('name', '=', 'deleted later').execute()
    await store.db.insertInto('pets').values({ id: ABOVE_DOUBLE, name: 'big id', category_id: 7n, status: 'sold' }).execute()
    const live = await createKey(store.apiKeys, 'live ключ')
    const revoked = await createKey(store.apiKeys, 'revoked')
    await store.apiKeys.revokeApiKey(revoked.record.id, '2030-01-02T03:04:05.678Z')
    return { liveKey: live.key, revokedKey: revoked.key }
  })
}

/** Asserts a failed command: exit 1, exactly one stderr line matching `line`, no stack trace. */
function assertOneLineFailure(result: CliResult, line: RegExp): void {
  assert.equal(result.code, 1, `expected exit 1; stdout: ${result.stdout}; stderr: ${result.stderr}`)
  const lines = result.stderr.trimEnd().split('\n')
  assert.equal(lines.length, 1, `expected one stderr line, got:\n${result.stderr}`)
  assert.match(lines[0] ?? '', line)
  assert.doesNotMatch(result.stderr, STACK_FRAME)
}

/** The `source:` and `target:` lines of a copy's output. */
function summaryLines(stdout: string): { source: string; target: string } {
  const source = /^source: (.*)$/m.exec(stdout)?.[1]
  const target = /^target: (.*)$/m.exec(stdout)?.[1]
  assert.ok(source && target, `no source/target lines in:\n${stdout}`)
  return { source, target }
}

describe('animal-store copy: SQLite to PostgreSQL', {
  skip: !TEST_DATABASES.includes('postgres') && 'PostgreSQL not in TEST_DATABASES',
}, () => {
  let dir: ReturnType<typeof tempDir>
  let sourcePath: string
  let from: string
  let keys: { liveKey: string; revokedKey: string }
  let target: { url: string; drop: () => Promise<void> }
  let sourceRows: Awaited<ReturnType<typeof rowsAsText>>

  before(async () => {
    assertBuilt()
    dir = tempDir()
    sourcePath = join(dir.path, 'source.db')
    from = `sqlite:${sourcePath}`
    keys = await seedSmallStore(sourcePath)
    sourceRows = await withStore(sqliteConfig(sourcePath), (store) => rowsAsText(store.db))
    target = await createTestPostgresDatabase()
  })
  after(async () => {
    killLeftovers()
    await target?.drop()
    dir?.remove()
  })

  const targetRows = () => withStore(postgresConfig(target.url), (store) => rowsAsText(store.db))

  it('copies every pet and API key exactly (ids, int64 edges, unicode, hashes, the revoked key) and prints the verification', async () => {
    assert.deepEqual(
      sourceRows.pets.map((pet) => pet.category_id),
      ['1', String(ABOVE_DOUBLE), String(INT64_MIN), String(INT64_MAX), '-1', '0', '7'],
      'the seed holds the int64 edges',
    )
    assert.deepEqual(
      sourceRows.pets.map((pet) => pet.id),
      ['1', '2', '4', '5', '6', '7', String(ABOVE_DOUBLE)],
    )
    assert.equal(sourceRows.apiKeys[1]?.revoked_at, '2030-01-02T03:04:05.678Z')

    const result = await runCli(['copy', '--from', from, '--to', target.url], cliEnv({}))
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    assert.deepEqual(await targetRows(), sourceRows)

    const url = new URL(target.url)
    assert.ok(!result.stdout.includes(url.password), 'the password is printed')
    const pets = `${sourceRows.pets.length} pets sha256:${documentedChecksum(sourceRows.pets)}`
    const apiKeys = `${sourceRows.apiKeys.length} API keys sha256:${documentedChecksum(sourceRows.apiKeys)}`
    assert.deepEqual(result.stdout.trimEnd().split('\n'), [
      `copying from ${from} to postgres://${url.host}${url.pathname}`,
      'copied 7/7 pets',
      'copied 2/2 API keys',
      `source: ${pets}, ${apiKeys}`,
      `target: ${pets}, ${apiKeys}`,
      'verified: the target matches the source (7 pets, 2 API keys)',
    ])
  })

  it('advances the identity sequences: the next pet and key get ids above the largest copied', async () => {
    await withStore(postgresConfig(target.url), async (store) => {
      const { id: petId } = await store.pets.insertPet({ name: 'after the copy', categoryId: 3n, status: 'available' })
      assert.ok(BigInt(petId) > ABOVE_DOUBLE, `new pet id ${petId}`)
      const { record } = await createKey(store.apiKeys, 'after the copy')
      assert.ok(record.id > 2n, `new key id ${record.id}`)
    })
  })

  it('refuses a non-empty target without --replace: exit 1, one stderr line, nothing changed', async () => {
    const before = await targetRows()
    assert.equal(before.pets.length, sourceRows.pets.length + 1)
    const result = await runCli(['copy', '--from', from, '--to', target.url], cliEnv({}))
    assertOneLineFailure(
      result,
      /^animal-store: the target database is not empty \(8 pets, 3 API keys\); pass --replace to empty it first \(nothing was changed\)$/,
    )
    assert.deepEqual(await targetRows(), before)
  })

  it('with --replace, empties the target and copies again', async () => {
    const result = await runCli(['copy', '--from', from, '--to', target.url, '--replace'], cliEnv({}))
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^verified: the target matches the source \(7 pets, 2 API keys\)$/m)
    assert.deepEqual(await targetRows(), sourceRows)
  })

  it('a copied key authenticates against `serve` on the PostgreSQL target, which lists the pets exactly; the revoked key does not', async () => {
    const server = await startServe(cliEnv({ DATABASE_URL: target.url }))
    try {
      const get = (key: string) => fetch(`${server.origin}/v1/pets?limit=100`, { headers: { authorization: `Bearer ${key}` } })
      const ok = await get(keys.liveKey)
      assert.equal(ok.status, 200)
      const listed = parseLossless(await ok.text(), null, (digits) => digits) as Array<Record<string, string>>
      assert.deepEqual(
        listed.map((pet) => Object.fromEntries(PET_MEMBERS.map((member) => [PET_COLUMNS[member], pet[member]]))),
        sourceRows.pets,
      )
      const refused = await get(keys.revokedKey)
      assert.equal(refused.status, 401)
      assert.doesNotMatch(server.stdout(), /not shown again/, 'no first key is created: the copied keys exist')
      assert.deepEqual(await server.stop('SIGTERM'), { code: 0, signal: null })
    } finally {
      server.kill()
    }
  })

  it('copies back from PostgreSQL into a new SQLite file just as exactly (either direction)', async () => {
    const backPath = join(dir.path, 'back.db')
    const result = await runCli(['copy', '--from', target.url, '--to', `sqlite:${backPath}`], cliEnv({}))
    assert.equal(result.code, 0, result.stderr)
    const { source, target: copied } = summaryLines(result.stdout)
    assert.equal(source, copied)
    assert.deepEqual(await withStore(sqliteConfig(backPath), (store) => rowsAsText(store.db)), sourceRows)
  })

  it('copies 100,000 pets within seconds and flat memory, printing progress every 10,000', async (t) => {
    const path = join(dir.path, 'large.db')
    const total = 100_000
    await withStore(sqliteConfig(path), (store) =>
      store.db.transaction().execute(async (trx) => {
        for (let first = 0; first < total; first += 5000) {
          const rows = Array.from({ length: 5000 }, (_, i) => ({
            name: `pet ${first + i} 🐾`,
            category_id: (BigInt(first + i) * 92_233_720_368_547n) % INT64_MAX,
            status: ['available', 'pending', 'sold'][(first + i) % 3] as string,
          }))
          await trx.insertInto('pets').values(rows).execute()
        }
      }),
    )
    const large = await createTestPostgresDatabase()
    try {
      // Peak RSS of the copy process, written by a preloaded module when it exits (kilobytes).
      const rssFile = join(dir.path, 'rss.txt')
      const preload = join(dir.path, 'report-rss.mjs')
      writeFileSync(
        preload,
        `import { writeFileSync } from 'node:fs'\nprocess.on('exit', () => writeFileSync(${JSON.stringify(rssFile)}, String(process.resourceUsage().maxRSS)))\n`,
      )
      const started = performance.now()
      const result = await runCli(
        ['copy', '--from', `sqlite:${path}`, '--to', large.url],
        cliEnv({ NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` }),
        60_000,
      )
      const seconds = (performance.now() - started) / 1000
      assert.equal(result.code, 0, result.stderr)
      const peakMiB = Number(readFileSync(rssFile, 'utf8')) / 1024
      t.diagnostic(
        `copied ${total} pets in ${seconds.toFixed(2)} s (${Math.round(total / seconds)} rows/s, whole process incl. start-up, migrations and verification); peak RSS ${peakMiB.toFixed(1)} MiB`,
      )
      const progress = result.stdout.split('\n').filter((line) => line.endsWith(' pets') && line.startsWith('copied '))
      assert.deepEqual(
        progress,
        Array.from({ length: 10 }, (_, i) => `copied ${(i + 1) * 10_000}/${total} pets`),
      )
      assert.match(result.stdout, /^verified: the target matches the source \(100000 pets, 0 API keys\)$/m)
      await withStore(postgresConfig(large.url), async (store) => {
        const { count } = await store.db
          .selectFrom('pets')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .executeTakeFirstOrThrow()
        assert.equal(Number(count), total)
        const next = await store.pets.insertPet({ name: 'next', categoryId: 1n, status: 'sold' })
        assert.equal(next.id, String(total + 1))
      })
      assert.ok(peakMiB < 256, `peak RSS ${peakMiB.toFixed(1)} MiB: memory is not flat`)
    } finally {
      await large.drop()
    }
  })
})

describe('animal-store copy: refusals and verification (SQLite)', () => {
  const dir = tempDir()
  const sourcePath = join(dir.path, 'source.db')
  const from = `sqlite:${sourcePath}`
  before(async () => {
    assertBuilt()
    await seedSmallStore(sourcePath)
  })
  after(() => {
    killLeftovers()
    dir.remove()
  })

  it('rolls back and exits 1 when the checksums differ, printing both sides', async () => {
    const targetPath = join(dir.path, 'altering.db')
    await withStore(sqliteConfig(targetPath), async (store) => {
      // A target that does not store what it is given: every copied name gains a "!".
      await sql`create trigger alter_names after insert on pets begin update pets set name = name || '!' where id = new.id; end`.execute(
        store.db,
      )
    })
    const result = await runCli(['copy', '--from', from, '--to', `sqlite:${targetPath}`], cliEnv({}))
    assertOneLineFailure(
      result,
      /^animal-store: verification failed: the target differs from the source in pets; nothing was committed to the target$/,
    )
    const { source, target } = summaryLines(result.stdout)
    assert.notEqual(source, target)
    assert.equal(source.replace(/^\d+ pets sha256:[0-9a-f]{64}/, ''), target.replace(/^\d+ pets sha256:[0-9a-f]{64}/, ''))
    assert.doesNotMatch(result.stdout, /^verified/m)
    const left = await withStore(sqliteConfig(targetPath), (store) => rowsAsText(store.db))
    assert.deepEqual(left, { pets: [], apiKeys: [] })
  })

  it('copies SQLite to SQLite too', async () => {
    const targetPath = join(dir.path, 'copy.db')
    const result = await runCli(['copy', '--from', from, '--to', `sqlite:${targetPath}`], cliEnv({}))
    assert.equal(result.code, 0, result.stderr)
    assert.deepEqual(
      await withStore(sqliteConfig(targetPath), (store) => rowsAsText(store.db)),
      await withStore(sqliteConfig(sourcePath), (store) => rowsAsText(store.db)),
    )
  })

  it('carries and verifies a column only a migration knows of (one src/store/copy.ts never names)', async () => {
    // As a newer release would add a Pet member: its migration, applied after this release's ones.
    const addColour = (db: Kysely<Database>) =>
      new Migrator({
        db,
        provider: {
          getMigrations: async () => ({
            ...MIGRATIONS,
            '9000-add-pet-colour': { up: (db) => db.schema.alterTable('pets').addColumn('colour', 'text').execute() },
          }),
        },
      }).migrateToLatest()
    const coloured = join(dir.path, 'coloured.db')
    await withStore(sqliteConfig(coloured), async (store) => {
      assert.equal((await addColour(store.db)).error, undefined)
      await store.pets.insertPet({ name: 'Rex', categoryId: 1n, status: 'available' })
      await sql`update pets set colour = 'brown' where name = 'Rex'`.execute(store.db)
    })
    const targetPath = join(dir.path, 'coloured-target.db')
    await withStore(sqliteConfig(targetPath), async (store) => assert.equal((await addColour(store.db)).error, undefined))
    const copied = await runCli(['copy', '--from', `sqlite:${coloured}`, '--to', `sqlite:${targetPath}`], cliEnv({}))
    assert.equal(copied.code, 0, copied.stderr)
    const rows = await withStore(sqliteConfig(targetPath), (store) => rowsAsText(store.db))
    assert.deepEqual(
      rows.pets.map((pet) => pet.colour),
      ['brown'],
    )
    assert.deepEqual(rows, await withStore(sqliteConfig(coloured), (store) => rowsAsText(store.db)))

    // The checksum covers it: a target that alters only the new column fails verification.
    const altering = join(dir.path, 'colour-altering.db')
    await withStore(sqliteConfig(altering), async (store) => {
      assert.equal((await addColour(store.db)).error, undefined)
      await sql`create trigger alter_colours after insert on pets begin update pets set colour = 'grey' where id = new.id; end`.execute(
        store.db,
      )
    })
    const verified = await runCli(['copy', '--from', `sqlite:${coloured}`, '--to', `sqlite:${altering}`], cliEnv({}))
    assertOneLineFailure(verified, /^animal-store: verification failed: the target differs from the source in pets; /)

    // A target without the column is refused before anything is written: the colour would be lost.
    const uncoloured = join(dir.path, 'uncoloured.db')
    const refused = await runCli(['copy', '--from', `sqlite:${coloured}`, '--to', `sqlite:${uncoloured}`], cliEnv({}))
    assertOneLineFailure(refused, /^animal-store: .*the target's pets table has no column colour/)
    assert.deepEqual(await withStore(sqliteConfig(uncoloured), (store) => rowsAsText(store.db)), { pets: [], apiKeys: [] })
  })

  it('takes both URLs from COPY_FROM_URL and COPY_TO_URL, so no password is on the command line', async () => {
    const targetPath = join(dir.path, 'from-env.db')
    const result = await runCli(['copy'], cliEnv({ COPY_FROM_URL: from, COPY_TO_URL: `sqlite:${targetPath}` }))
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^verified: /m)
    assert.deepEqual(
      await withStore(sqliteConfig(targetPath), (store) => rowsAsText(store.db)),
      await withStore(sqliteConfig(sourcePath), (store) => rowsAsText(store.db)),
    )
  })

  it('copies from DATABASE_URL when neither --from nor COPY_FROM_URL is given; a flag wins over the variable', async () => {
    const targetPath = join(dir.path, 'from-database-url.db')
    const env = cliEnv({ DATABASE_URL: from, COPY_TO_URL: `sqlite:${join(dir.path, 'not-this.db')}` })
    const result = await runCli(['copy', '--to', `sqlite:${targetPath}`], env)
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^verified: .*\(7 pets, 2 API keys\)$/m)
    assert.equal(existsSync(join(dir.path, 'not-this.db')), false)
  })

  it('names the variable, and never prints the password, when COPY_TO_URL names an unreachable PostgreSQL', async () => {
    const result = await runCli(['copy'], cliEnv({ COPY_FROM_URL: from, COPY_TO_URL: 'postgres://user:s3cr3t@127.0.0.1:1/db' }))
    assertOneLineFailure(result, /^animal-store: COPY_TO_URL: the database is unavailable/)
    assert.doesNotMatch(result.stdout + result.stderr, /s3cr3t/)
  })

  const unused = () => `sqlite:${join(dir.path, 'unused.db')}`
  for (const [title, args, line] of [
    [
      'a --to URL that is not valid, naming the flag and not echoing it',
      () => ['--from', from, '--to', 'postgres://user:s3cr3t@[::1/db'],
      /^animal-store: --to is not a valid postgres:\/\/ URL/,
    ],
    [
      'a --from URL of an unknown kind',
      () => ['--from', 'mysql://user:s3cr3t@host/db', '--to', unused()],
      /^animal-store: --from must be /,
    ],
    [
      'a --from SQLite file that does not exist',
      () => ['--from', `sqlite:${join(dir.path, 'missing.db')}`, '--to', unused()],
      /^animal-store: --from names no existing SQLite file: /,
    ],
    [
      'the same database on both sides',
      () => ['--from', from, '--to', from],
      /^animal-store: --from and --to name the same database$/,
    ],
    [
      'a missing --to (and no COPY_TO_URL), naming both',
      () => ['--from', from],
      /^animal-store: COPY_TO_URL is not set and no --to was given/,
    ],
    [
      'a mistyped flag carrying a URL, echoing it without the password',
      () => ['--from', from, '--to', unused(), '--replac=postgres://user:s3cr3t@db.example/x'],
      /^error: unknown option '--replac=postgres:\/\/user:\*\*\*@db\.example\/x'/,
    ],
  ] as const) {
    it(`refuses ${title}`, async () => {
      const result = await runCli(['copy', ...args()], cliEnv({}))
      assert.equal(result.code, 1, result.stderr)
      assert.match(result.stderr.trimEnd(), line)
      assert.doesNotMatch(result.stderr, /s3cr3t/)
      assert.doesNotMatch(result.stderr, STACK_FRAME)
      assert.equal(existsSync(join(dir.path, 'unused.db')), false, 'a refused copy creates no target file')
    })
  }
})
