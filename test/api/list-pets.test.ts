// GET /v1/pets (listPets): limit/status rules (docs/specification.md, listPets), id order, and the
// keyset cursor with its Link header (docs/specification.md, Pagination).
import assert from 'node:assert/strict'
import { after, before, it } from 'node:test'
import {
  call,
  describeEachDatabase,
  freshDatabase,
  startServer,
  type TestServer,
  tempDir,
} from '../../scripts/lib/test-server.js'
import { MAX_PAGE_LIMIT } from '../../src/schemas.js'

describeEachDatabase('GET /v1/pets (listPets)', (database) => {
  let server: TestServer
  const created: Array<{ id: number; name: string; status: string }> = []
  before(async () => {
    server = await startServer({ database })
    const statuses = ['available', 'pending', 'sold']
    for (let i = 0; i < 45; i++) {
      const response = await call(server, 'POST', '/v1/pets', {
        body: { name: `pet ${i}`, categoryId: i, status: statuses[i % 3] },
      })
      created.push(response.json)
    }
  })
  after(() => server.close())

  it('returns a bare JSON array of the first 20 pets in id order by default', async () => {
    const response = await call(server, 'GET', '/v1/pets')
    assert.equal(response.status, 200)
    assert.ok(Array.isArray(response.json))
    assert.deepEqual(response.json, created.slice(0, 20))
  })

  it('returns an empty array (not 404) when the store is empty', async () => {
    const empty = await startServer({ database })
    try {
      const response = await call(empty, 'GET', '/v1/pets')
      assert.equal(response.status, 200)
      assert.deepEqual(response.json, [])
      assert.equal(response.headers.get('link'), null)
    } finally {
      await empty.close()
    }
  })

  for (const limit of [1, 7, 100]) {
    it(`returns at most limit=${limit} pets`, async () => {
      const response = await call(server, 'GET', `/v1/pets?limit=${limit}`)
      assert.equal(response.status, 200)
      assert.deepEqual(response.json, created.slice(0, limit))
    })
  }

  for (const status of ['available', 'pending', 'sold']) {
    it(`filters by status=${status}`, async () => {
      const response = await call(server, 'GET', `/v1/pets?status=${status}&limit=100`)
      assert.equal(response.status, 200)
      assert.deepEqual(
        response.json,
        created.filter((pet) => pet.status === status),
      )
    })
  }

  for (const query of [
    'limit=0',
    `limit=${MAX_PAGE_LIMIT + 1}`,
    'limit=-1',
    'limit=1.5',
    'limit=abc',
    'limit=',
    'limit=%2010',
    'limit=0x10',
    'limit=1e1',
    'limit=+5',
    'limit=05',
    'limit=9007199254740993',
    'limit=99999999999999999999999',
    'limit=5&limit=6',
  ]) {
    it(`rejects ${query} with 400 invalid_request naming limit (validated, never clamped)`, async () => {
      const response = await call(server, 'GET', `/v1/pets?${query}`)
      assert.equal(response.status, 400)
      assert.equal(response.json.code, 'invalid_request')
      assert.deepEqual(
        response.json.details.map((d: { in: string; field: string }) => `${d.in}.${d.field}`),
        ['query.limit'],
      )
    })
  }

  for (const query of ['status=lost', 'status=AVAILABLE', 'status=', 'status=sold&status=pending']) {
    it(`rejects ${query} with 400 invalid_request naming status`, async () => {
      const response = await call(server, 'GET', `/v1/pets?${query}`)
      assert.equal(response.status, 400)
      assert.deepEqual([...new Set(response.json.details.map((d: { field: string }) => d.field))], ['status'])
    })
  }

  it('names every bad parameter at once, the cursor included', async () => {
    const response = await call(server, 'GET', '/v1/pets?cursor=abc&status=Available&limit=0')
    assert.equal(response.status, 400)
    assert.deepEqual([...new Set(response.json.details.map((d: { field: string }) => d.field))].sort(), [
      'cursor',
      'limit',
      'status',
    ])
  })

  it('rejects an unknown query parameter with 400 naming it', async () => {
    const response = await call(server, 'GET', '/v1/pets?limt=5')
    assert.equal(response.status, 400)
    assert.deepEqual(response.json.details, [{ in: 'query', field: 'limt', message: 'is not a known parameter' }])
  })

  it('pages through every pet with the Link rel="next" cursor, without gaps or repeats', async () => {
    const seen: unknown[] = []
    let path: string | undefined = '/v1/pets?limit=10'
    let pages = 0
    while (path) {
      const response = await call(server, 'GET', path)
      assert.equal(response.status, 200)
      seen.push(...response.json)
      pages++
      const link = response.headers.get('link')
      path = link ? /^<([^>]+)>; rel="next"$/.exec(link)?.[1] : undefined
      if (link) assert.ok(path, `Link header form: ${link}`)
    }
    assert.equal(pages, 5)
    assert.deepEqual(seen, created)
  })

  it('keeps the status filter in the next link', async () => {
    const first = await call(server, 'GET', '/v1/pets?limit=4&status=sold')
    const next = /^<([^>]+)>/.exec(first.headers.get('link') ?? '')?.[1] ?? ''
    assert.match(next, /status=sold/)
    const second = await call(server, 'GET', next)
    const sold = created.filter((pet) => pet.status === 'sold')
    assert.deepEqual([...first.json, ...second.json], sold.slice(0, 8))
  })

  it('omits the Link header on the last page', async () => {
    const response = await call(server, 'GET', '/v1/pets?limit=100')
    assert.equal(response.json.length, 45)
    assert.equal(response.headers.get('link'), null)
  })

  it('writes absolute next links under PUBLIC_URL when it is set', async () => {
    const withPublicUrl = await startServer({ database, publicUrl: 'https://api.example.com/v1' })
    try {
      for (let i = 0; i < 2; i++) await call(withPublicUrl, 'POST', '/v1/pets', { body: { name: `p${i}`, categoryId: 1 } })
      const response = await call(withPublicUrl, 'GET', '/v1/pets?limit=1')
      assert.match(
        response.headers.get('link') ?? '',
        /^<https:\/\/api\.example\.com\/v1\/pets\?limit=1&cursor=[^>]+>; rel="next"$/,
      )
    } finally {
      await withPublicUrl.close()
    }
  })

  for (const cursor of ['abc', 'MS41', '%00', 'x'.repeat(65), 'MDAx']) {
    it(`rejects cursor=${cursor.slice(0, 10)} (not one the service issued) with 400 naming cursor`, async () => {
      const response = await call(server, 'GET', `/v1/pets?cursor=${cursor}`)
      assert.equal(response.status, 400)
      assert.deepEqual([...new Set(response.json.details.map((d: { field: string }) => d.field))], ['cursor'])
    })
  }

  const nextPath = (response: { headers: Headers }) =>
    /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1] ?? ''
  const expect400NamingCursor = async (target: TestServer, path: string) => {
    const response = await call(target, 'GET', path)
    assert.equal(response.status, 400)
    assert.equal(response.json.code, 'invalid_request')
    assert.deepEqual([...new Set(response.json.details.map((d: { field: string }) => d.field))], ['cursor'])
  }

  it('rejects a forged cursor (the base64url of an id, as cursors were before they were signed) with 400 naming cursor', async () => {
    const id = created[9]?.id
    await expect400NamingCursor(server, `/v1/pets?cursor=${Buffer.from(String(id)).toString('base64url')}`)
  })

  it('rejects a tampered cursor (another id under an issued signature, or a changed signature) with 400 naming cursor', async () => {
    const cursor =
      new URL(nextPath(await call(server, 'GET', '/v1/pets?limit=10')), 'http://host').searchParams.get('cursor') ?? ''
    const [, signature = ''] = cursor.split('.')
    const otherId = Buffer.from(String(created[19]?.id)).toString('base64url')
    await expect400NamingCursor(server, `/v1/pets?cursor=${otherId}.${signature}`)
    const flipped = `${cursor.slice(0, -2)}${cursor.at(-2) === 'A' ? 'B' : 'A'}${cursor.at(-1)}`
    await expect400NamingCursor(server, `/v1/pets?cursor=${flipped}`)
    assert.equal((await call(server, 'GET', `/v1/pets?cursor=${cursor}`)).status, 200, 'the cursor as issued')
  })

  it('accepts a cursor on every instance sharing the database, and after a restart; another database refuses it', async () => {
    const dir = tempDir()
    const shared = await freshDatabase(database, dir.path)
    const a = await startServer({ databaseConfig: shared.config })
    const b = await startServer({ databaseConfig: shared.config })
    let aClosed = false
    try {
      for (let i = 0; i < 5; i++) await call(a, 'POST', '/v1/pets', { body: { name: `shared ${i}`, categoryId: i } })
      const first = await call(a, 'GET', '/v1/pets?limit=2')
      const next = nextPath(first)
      const onB = await call(b, 'GET', next, { key: a.key })
      assert.equal(onB.status, 200)
      assert.deepEqual(
        onB.json.map((pet: { name: string }) => pet.name),
        ['shared 2', 'shared 3'],
      )
      await a.close()
      aClosed = true
      const restarted = await startServer({ databaseConfig: shared.config })
      try {
        const again = await call(restarted, 'GET', next, { key: restarted.key })
        assert.deepEqual(again.json, onB.json)
      } finally {
        await restarted.close()
      }
      await expect400NamingCursor(server, next)
    } finally {
      if (!aClosed) await a.close()
      await b.close()
      await shared.drop()
      dir.remove()
    }
  })
})
