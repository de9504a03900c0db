// Cursors for the mixed workload, taken from real responses: follow listPets' `Link: <…>; rel="next"` headers.

/** A first-page listPets path with a random `limit` (1–100) and, three times in four, a random `status`. */
export function randomListPath(random: () => number): string {
  const limit = 1 + Math.floor(random() * 100)
  const status = [undefined, 'available', 'pending', 'sold'][Math.floor(random() * 4)]
  return `/v1/pets?limit=${limit}${status ? `&status=${status}` : ''}`
}

/**
 * Collects `count` next-page paths (`/v1/pets?…&cursor=…`) from `origin`: starts from random first pages and follows
 * each `Link` rel="next" for up to `depth` pages. Throws on any status but 200 or when the pool stays short.
 */
export async function collectCursorPaths(
  origin: string,
  authorization: string,
  count: number,
  random: () => number,
  depth = 5,
): Promise<string[]> {
  const pool: string[] = []
  for (let attempt = 0; pool.length < count && attempt < count * 2; attempt++) {
    let path: string | undefined = randomListPath(random)
    for (let page = 0; path !== undefined && page < depth && pool.length < count; page++) {
      const response: Response = await fetch(origin + path, { headers: { authorization } })
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`collecting cursors: GET ${path} answered ${response.status}`)
      const next = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
      path = next === undefined ? undefined : new URL(next, origin).pathname + new URL(next, origin).search
      if (path !== undefined) pool.push(path)
    }
  }
  if (pool.length < count) throw new Error(`collecting cursors: only ${pool.length} of ${count} next links found`)
  return pool
}
