// openapi.json through the generators client developers use, with their default options: the
// validators @hey-api/openapi-ts and orval write (zod) judge names exactly as the live service does,
// openapi-typescript keeps NewPet.status optional, and the generated client's base URL can be dialled.
// Then the README's "Generated clients" recipes, taken from the README as they stand there, against
// a live service: every int64 edge round-trips exactly, pages follow Link, getPet's Deprecation and
// Sunset are read, and an error is an Error.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createClient as heyApi } from '@hey-api/openapi-ts'
import { generate as orval } from 'orval'
import { call, describeEachDatabase, startServer, type TestServer } from '../../scripts/lib/test-server.js'
import { SUNSET_DATE } from '../../src/http/routes/deprecation.js'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const OPENAPI = `${ROOT}openapi.json`
// Inside the repository (its ignored .tmp/), so the generated files resolve `zod` from node_modules.
const OUT = `${ROOT}.tmp/openapi-generators/`

/** openapi-typescript, as the client workspace (its one user) resolves it. */
const OPENAPI_TYPESCRIPT = createRequire(`${ROOT}clients/typescript/package.json`).resolve('openapi-typescript')

/** Names on both sides of the rule: astral, a lone surrogate, U+FFFD (valid), NUL, blank, and more. */
const NAMES = ['Rex 🐶', 'lone\uD800', 'bad\uFFFD', 'a\u0000b', 'x\uDC00y', 'Zoë', '猫', '   ', 'R']

interface Validator {
  safeParse(value: unknown): { success: boolean }
}

describe('openapi.json through client generators', () => {
  let server: TestServer
  /** The service's verdict per name: true when it answers 201. */
  const accepted = new Map<string, boolean>()
  before(async () => {
    rmSync(OUT, { recursive: true, force: true })
    server = await startServer()
    for (const name of NAMES) {
      const response = await call(server, 'POST', '/v1/pets', { body: { name, categoryId: 1 } })
      assert.ok([201, 400].includes(response.status), `${JSON.stringify(name)}: ${response.status}`)
      accepted.set(name, response.status === 201)
    }
  })
  after(async () => {
    await server.close()
    rmSync(OUT, { recursive: true, force: true })
  })

  it('the service accepts "Rex 🐶" and U+FFFD and refuses a lone surrogate and NUL (the reference)', () => {
    assert.deepEqual(
      ['Rex 🐶', 'bad\uFFFD', 'lone\uD800', 'a\u0000b'].map((name) => accepted.get(name)),
      [true, true, false, false],
    )
  })

  it('@hey-api/openapi-ts (zod): zNewPet judges every name as the service does; the client dials http://127.0.0.1:8080/v1', async () => {
    await heyApi({
      input: OPENAPI,
      output: `${OUT}hey-api`,
      plugins: ['@hey-api/client-fetch', 'zod'],
      logs: { level: 'silent' },
    } as Parameters<typeof heyApi>[0])
    const { zNewPet } = (await import(`${OUT}hey-api/zod.gen.ts`)) as { zNewPet: Validator }
    for (const name of NAMES) {
      assert.equal(zNewPet.safeParse({ name, categoryId: 1 }).success, accepted.get(name), JSON.stringify(name))
    }
    assert.match(readFileSync(`${OUT}hey-api/client.gen.ts`, 'utf8'), /baseUrl: 'http:\/\/127\.0\.0\.1:8080\/v1'/)
  })

  it('orval (zod): createPetBody judges every name as the service does', async () => {
    await orval({ input: { target: OPENAPI }, output: { target: `${OUT}orval/api.ts`, client: 'zod' } })
    const { createPetBody } = (await import(`${OUT}orval/api.ts`)) as { createPetBody: Validator }
    for (const name of NAMES) {
      assert.equal(createPetBody.safeParse({ name, categoryId: 1 }).success, accepted.get(name), JSON.stringify(name))
    }
  })

  it('openapi-typescript, default options: NewPet.status is optional, name a string (types only, no check)', async () => {
    const { default: openapiTS, astToString } = (await import(OPENAPI_TYPESCRIPT)) as {
      default(document: object): Promise<unknown>
      astToString(ast: unknown): string
    }
    const text = astToString(await openapiTS(JSON.parse(readFileSync(OPENAPI, 'utf8'))))
    const newPet = /NewPet: \{([\s\S]*?)\n {8}\};/.exec(text)?.[1] ?? ''
    assert.match(newPet, /\n\s+status\?: "available" \| "pending" \| "sold";/)
    assert.match(newPet, /\n\s+name: string;/)
  })
})

/** The README's "Generated clients" section: its files (```ts blocks opening with `// <file>`) and its npx commands. */
function readmeRecipes(): { files: Record<string, string>; commands: string[] } {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8')
  const start = readme.indexOf('\n## Generated clients\n')
  assert.ok(start >= 0, 'the README has a "Generated clients" section')
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
  const files: Record<string, string> = {}
  for (const [, code] of section.matchAll(/```ts\n([\s\S]*?)```/g)) {
    const name = /^\/\/ (\S+)\n/.exec(code ?? '')?.[1]
    assert.ok(name, `each recipe opens with its file name: ${code?.slice(0, 40)}`)
    files[name] = code ?? ''
  }
  const commands = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap(([, block]) =>
    (block ?? '').split('\n').filter((line) => line.startsWith('npx ')),
  )
  return { files, commands }
}

/** The installed program each README command's `npx <package>` runs. */
const BINS: Record<string, string> = {
  'openapi-typescript': `${OPENAPI_TYPESCRIPT.slice(0, OPENAPI_TYPESCRIPT.lastIndexOf('/dist/'))}/bin/cli.js`,
  '@hey-api/openapi-ts': `${ROOT}node_modules/.bin/openapi-ts`,
  orval: `${ROOT}node_modules/.bin/orval`,
}

/** What each recipe module exports, the same for the three generators. */
interface Recipe {
  createPet(pet: { name: string; categoryId: bigint }): Promise<{ id: number | bigint; categoryId: number | bigint }>
  getPet(
    petId: bigint,
  ): Promise<{ pet: { id: number | bigint; categoryId: number | bigint }; deprecation: string | null; sunset: string | null }>
  listPets(cursor?: string, limit?: number): Promise<{ pets: { id: number | bigint }[]; next: string | undefined }>
}

const INT64_EDGES = [2n ** 63n - 1n, -(2n ** 63n - 1n), 2n ** 53n + 1n]

describeEachDatabase('README "Generated clients": each recipe, as written there, against a live service', (database) => {
  const dir = `${OUT}recipes-${database}/`
  let server: TestServer
  before(async () => {
    server = await startServer({ database })
    const { files, commands } = readmeRecipes()
    assert.deepEqual(Object.keys(files).sort(), [
      'hey-api.ts',
      'int64-json.ts',
      'openapi-fetch.ts',
      'orval.config.ts',
      'orval.ts',
    ])
    assert.equal(commands.length, 3)
    mkdirSync(dir, { recursive: true })
    const live = (text: string) => text.replaceAll('http://127.0.0.1:8080', server.origin)
    for (const [name, code] of Object.entries(files)) writeFileSync(`${dir}${name}`, live(code))
    process.env.ANIMAL_STORE_URL = `${server.origin}/v1`
    process.env.ANIMAL_STORE_KEY = server.key
    for (const command of commands) {
      const [, program, ...args] = live(command).split(/\s+/)
      const bin = BINS[program ?? '']
      assert.ok(bin, `a known generator: ${command}`)
      await promisify(execFile)(process.execPath, [bin, ...args], { cwd: dir, timeout: 120_000 })
    }
    for (let i = 0; i < 3; i++) await call(server, 'POST', '/v1/pets', { body: { name: `Paged ${i}`, categoryId: 1 } })
  })
  after(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  for (const recipe of ['openapi-fetch', 'hey-api', 'orval']) {
    it(`${recipe}: creates and reads back +(2^63-1), -(2^63-1) and 2^53+1 exactly, pages by Link, reads Deprecation and Sunset`, async (t) => {
      const client = (await import(`${dir}${recipe}.ts`)) as Recipe
      const ids: bigint[] = []
      for (const categoryId of INT64_EDGES) {
        const created = await client.createPet({ name: `${recipe} ${categoryId}`, categoryId })
        assert.equal(BigInt(created.categoryId), categoryId, `${recipe}: the 201 answer`)
        const stored = await call(server, 'GET', `/v1/pets/${created.id}`)
        assert.ok(stored.text.includes(`"categoryId":${categoryId}`), `${recipe}: stored ${stored.text}`)
        const read = await client.getPet(BigInt(created.id))
        assert.equal(BigInt(read.pet.categoryId), categoryId, `${recipe}: getPet`)
        assert.equal(read.deprecation, '@1795132800')
        assert.equal(read.sunset, SUNSET_DATE)
        ids.push(BigInt(created.id))
        t.diagnostic(`${recipe}: categoryId ${categoryId} -> 201 ${created.categoryId}, getPet ${read.pet.categoryId}`)
      }
      // Every pet, by following Link from the first page to the last, 2 per page.
      const seen: bigint[] = []
      let cursor: string | undefined
      let pages = 0
      do {
        const page = await client.listPets(cursor, 2)
        seen.push(...page.pets.map((pet) => BigInt(pet.id)))
        cursor = page.next
        pages++
      } while (cursor && pages < 100)
      const everyPet = await call(server, 'GET', '/v1/pets?limit=100')
      assert.deepEqual(
        seen,
        (everyPet.exact as { id: bigint }[]).map((pet) => BigInt(pet.id)),
        `${recipe}: every pet once, in order`,
      )
      assert.ok(pages >= 3, `${recipe}: ${pages} pages`)
      for (const id of ids) assert.ok(seen.includes(id), `${recipe}: pet ${id} listed`)
      await assert.rejects(client.getPet(2n ** 62n), (error: unknown) => {
        assert.ok(error instanceof Error, `${recipe}: an Error, not ${typeof error}`)
        assert.match(error.message, /404/)
        return true
      })
    })
  }
})
