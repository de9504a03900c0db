// openapi.json through the generators client developers use, with their default options: the
// validators @hey-api/openapi-ts and orval write (zod) judge names exactly as the live service does,
// openapi-typescript keeps NewPet.status optional, and the generated client's base URL can be dialled.
import assert from 'node:assert/strict'
import { readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { createClient as heyApi } from '@hey-api/openapi-ts'
import { generate as orval } from 'orval'
import { call, startServer, type TestServer } from '../../scripts/lib/test-server.js'

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
