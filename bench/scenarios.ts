// What the bench sends: the scenarios (their requests, the processes they run against on each database, the targets
// the report judges: docs/benchmarks.md, Targets, states the same), the soak's mix, the pools of list paths they draw
// from, and the preflight that checks one answer of each kind before any load.

/**
 * The processes a scenario may run against, in the report's order: the service as shipped, the previous release
 * (PREVIOUS_RELEASE, scripts/lib/previous-release.ts), and the reference apps of bench/references/ (one file each).
 */
export const PROCESSES = ['service', 'previous', 'minimal-fastify', 'typical-fastify', 'typical-express', 'bare'] as const
/** One process of the bench. */
export type Process = (typeof PROCESSES)[number]
/** What the report and docs/benchmarks.md call each process. */
export const PROCESS_NAMES: Record<Process, string> = {
  service: 'service',
  previous: 'previous release',
  'minimal-fastify': 'minimal Fastify',
  'typical-fastify': 'typical Fastify',
  'typical-express': 'typical Express',
  bare: 'bare node:http',
}
/** The databases, in run order. */
export const DATABASES = ['sqlite', 'postgres'] as const
/** One database. */
export type Database = (typeof DATABASES)[number]

/** One kind of request; each request picks a kind by weight, then one of its paths (or a random id) at random. */
export interface RequestKind {
  weight: number
  method: 'GET' | 'POST'
  /** Paths with their query; with `ids`, one prefix such as `/v1/pets/` followed by a random id in that range. */
  paths: string[]
  ids?: [number, number]
  /** A JSON body, sent with `Content-Type: application/json`. */
  body?: string
  /** Whether the API key is sent (`Authorization: Bearer …`), or a key no server accepts (`'wrong'`). */
  key: boolean | 'wrong'
  /** The only status this kind may be answered with. */
  expected: number
}

/** What the workloads draw from, gathered per process after start-up. */
export interface Pools {
  /** Pets seeded with ids 1..seeded. */
  seeded: number
  /** First-page list paths with a random `limit` and `status`, the same for every process. */
  firstPages: string[]
  /** Next-page paths from this process's own `Link` headers, reached from `firstPages`. */
  nextPages: string[]
}

/** A ratio target: the median per-round ratio of the service's req/s to `over`'s is at least `min`. */
export interface Ratio {
  over: Exclude<Process, 'service'>
  min: number
}

/** A PostgreSQL CPU target: the median per-round ratio of PostgreSQL's CPU per request for the service to `over`'s is at most `max`. */
interface DatabaseCpuRatio {
  over: Exclude<Process, 'service'>
  max: number
}

/** What a scenario runs on one database: the processes, and the targets it is judged by. */
interface ScenarioRun {
  processes: Process[]
  targets: Ratio[]
  /** On PostgreSQL: at most this share of PostgreSQL's CPU per request, against a reference's. */
  databaseCpu?: DatabaseCpuRatio
}

/** One scenario: its requests, and per database the processes it runs against and the targets it is judged by. */
export interface Scenario {
  id: string
  title: string
  kinds(pools: Pools): RequestKind[]
  on: Partial<Record<Database, ScenarioRun>>
  /** Whether the service's p99 at half its saturated rate is measured (on each database) and judged against HALF_RATE_P99_MS. */
  halfRate: boolean
}

/** A fixed key passed in API_KEYS (so none is created at start-up); the references compare the header as a string. */
export const AUTHORIZATION = 'Bearer bench-api-key-0123456789-abcdefghijklmnopqrstuvwxyz'
/** A well-formed key no server accepts. */
export const WRONG_AUTHORIZATION = 'Bearer wrong-key-0123456789-abcdefghijklmnopqrstuvwxyz'
/** The body every create sends. */
const NEW_PET = '{"name":"bench-pet","categoryId":7,"status":"available"}'
/** The pets seeded before any load. */
export const SEEDED_PETS = 10_000
/** The highest p99 (ms) at half the saturated rate that meets its target. */
export const HALF_RATE_P99_MS = 5
/** The service's peak RSS may be at most this multiple of the minimal Fastify app's (same database, same run). */
export const PEAK_RSS_RATIO = 1.2
/** The most CPU per request (the service's, and PostgreSQL's for it) this release may cost, as a multiple of the previous release's. */
export const PREVIOUS_CPU_RATIO = 1.05

// Bare node:http has no database: it runs on SQLite only, as the floor. The minimal Fastify app serves every request
// the service serves on a database, so their peak RSS compare processes that did the same work.
const onSqlite: Process[] = ['service', 'previous', 'minimal-fastify', 'typical-fastify', 'typical-express', 'bare']
const onPostgres: Process[] = ['service', 'previous', 'minimal-fastify', 'typical-fastify', 'typical-express']
/** Ahead of the apps a team would typically ship, on every scenario (a)–(e) and both databases. */
const typical: Ratio[] = [
  { over: 'typical-fastify', min: 1.5 },
  { over: 'typical-express', min: 2.5 },
]
/** PostgreSQL spends no more per request for the service than for the typical Fastify app (the database does not scale out). */
const sparing: DatabaseCpuRatio = { over: 'typical-fastify', max: 1 }
const one =
  (method: 'GET' | 'POST', path: string, expected: number, extra: Partial<RequestKind> = {}) =>
  () => [{ weight: 1, method, paths: [path], expected, key: true, ...extra } satisfies RequestKind]
const getById = (pools: Pools, weight = 1): RequestKind => ({
  weight,
  method: 'GET',
  paths: ['/v1/pets/'],
  ids: [1, pools.seeded],
  key: true,
  expected: 200,
})

/** Every scenario, in letter order. */
export const SCENARIOS: Scenario[] = [
  {
    id: 'a',
    title: 'list 20',
    kinds: one('GET', '/v1/pets?limit=20', 200),
    on: {
      sqlite: { processes: onSqlite, targets: [{ over: 'minimal-fastify', min: 1.1 }, ...typical] },
      postgres: { processes: onPostgres, targets: [{ over: 'minimal-fastify', min: 1.2 }, ...typical], databaseCpu: sparing },
    },
    halfRate: true,
  },
  {
    id: 'b',
    title: 'list 100 by status',
    kinds: one('GET', '/v1/pets?limit=100&status=available', 200),
    on: {
      sqlite: { processes: onSqlite, targets: [{ over: 'minimal-fastify', min: 1.1 }, ...typical] },
      postgres: { processes: onPostgres, targets: typical, databaseCpu: sparing },
    },
    halfRate: false,
  },
  {
    id: 'c',
    title: 'create',
    kinds: one('POST', '/v1/pets', 201, { body: NEW_PET }),
    on: {
      sqlite: {
        processes: onSqlite,
        targets: [{ over: 'minimal-fastify', min: 3 }, { over: 'bare', min: 0.4 }, ...typical],
      },
      postgres: { processes: onPostgres, targets: typical, databaseCpu: sparing },
    },
    halfRate: true,
  },
  {
    id: 'd',
    title: 'get by id',
    kinds: (pools) => [getById(pools)],
    on: {
      sqlite: { processes: onSqlite, targets: [{ over: 'minimal-fastify', min: 0.8 }, ...typical] },
      postgres: { processes: onPostgres, targets: [{ over: 'minimal-fastify', min: 1.2 }, ...typical], databaseCpu: sparing },
    },
    halfRate: true,
  },
  {
    id: 'e',
    title: '401',
    kinds: one('GET', '/v1/pets', 401, { key: false }),
    // The minimal Fastify app serves it too, untargeted: the peak RSS target compares processes that served the
    // same requests.
    on: {
      sqlite: { processes: onSqlite, targets: [{ over: 'bare', min: 0.85 }, ...typical] },
      postgres: { processes: onPostgres, targets: typical },
    },
    halfRate: false,
  },
  {
    id: 'g',
    title: 'mixed 75/20/5',
    kinds: (pools) => [
      { weight: 37.5, method: 'GET', paths: pools.firstPages, key: true, expected: 200 },
      { weight: 37.5, method: 'GET', paths: pools.nextPages, key: true, expected: 200 },
      { weight: 20, method: 'POST', paths: ['/v1/pets'], body: NEW_PET, key: true, expected: 201 },
      getById(pools, 5),
    ],
    on: {
      sqlite: { processes: ['service', 'previous', 'minimal-fastify'], targets: [{ over: 'minimal-fastify', min: 1.0 }] },
    },
    halfRate: false,
  },
]

/** The soak's mix (`--soak`, the service alone): the bench's requests plus the refusals a real client meets. */
export function soakKinds(pools: Pools): RequestKind[] {
  const create = (weight: number, categoryId: string): RequestKind => ({
    weight,
    method: 'POST',
    paths: ['/v1/pets'],
    body: `{"name":"soak-pet","categoryId":${categoryId},"status":"pending"}`,
    key: true,
    expected: 201,
  })
  return [
    { weight: 34, method: 'GET', paths: pools.firstPages, key: true, expected: 200 },
    { weight: 33, method: 'GET', paths: pools.nextPages, key: true, expected: 200 },
    create(17, '7'),
    // Above 2^53: the service must keep every digit.
    create(2, '9007199254740993'),
    getById(pools, 10),
    { weight: 1, method: 'GET', paths: ['/v1/pets'], key: false, expected: 401 },
    // A body the service never reads (auth fails first): the connection must close cleanly.
    {
      weight: 1,
      method: 'POST',
      paths: ['/v1/pets'],
      body: '{"name":"never stored","categoryId":1}',
      key: 'wrong',
      expected: 401,
    },
    { weight: 1, method: 'POST', paths: ['/v1/pets'], body: '{"categoryId":7,"colour":"red"}', key: true, expected: 400 },
    { weight: 1, method: 'GET', paths: ['/v1/pets?limit=0&status=lost'], key: true, expected: 400 },
  ]
}

/** `≥ 1.50 × typical Fastify`: a ratio target as the report and docs/benchmarks.md state it. */
export function describeRatio(ratio: Ratio): string {
  return `≥ ${ratio.min.toFixed(2)} × ${PROCESS_NAMES[ratio.over]}`
}

/** First-page list paths (random limit and status; fixed seed) and the next pages `origin`'s own `Link` headers give. */
export async function collectPools(origin: string): Promise<Pools> {
  let state = 7
  const random = () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    return state / 2 ** 32
  }
  const firstPages = Array.from({ length: 200 }, () => {
    const status = [undefined, 'available', 'pending', 'sold'][Math.floor(random() * 4)]
    return `/v1/pets?limit=${1 + Math.floor(random() * 100)}${status ? `&status=${status}` : ''}`
  })
  const nextPages: string[] = []
  for (const first of firstPages) {
    let path: string | undefined = first
    for (let depth = 0; path !== undefined && depth < 3 && nextPages.length < 200; depth++) {
      const response: Response = await fetch(origin + path, { headers: { authorization: AUTHORIZATION } })
      await response.arrayBuffer()
      if (response.status !== 200) throw new Error(`collecting next pages: GET ${path} answered ${response.status}`)
      path = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
      if (path !== undefined) nextPages.push(path)
    }
  }
  if (nextPages.length < 200) throw new Error(`collecting next pages: only ${nextPages.length} found`)
  return { seeded: SEEDED_PETS, firstPages, nextPages }
}

/** One request of each kind to `origin`, each status checked, before any load. */
export async function preflight(origin: string, kinds: RequestKind[]): Promise<void> {
  for (const kind of kinds) {
    const path = `${kind.paths[0]}${kind.ids ? kind.ids[1] : ''}`
    const headers: Record<string, string> = kind.body === undefined ? {} : { 'content-type': 'application/json' }
    if (kind.key) headers.authorization = kind.key === 'wrong' ? WRONG_AUTHORIZATION : AUTHORIZATION
    const response = await fetch(origin + path, {
      method: kind.method,
      headers,
      ...(kind.body !== undefined && { body: kind.body }),
    })
    await response.arrayBuffer()
    if (response.status !== kind.expected)
      throw new Error(`preflight: ${kind.method} ${path} on ${origin} answered ${response.status}, not ${kind.expected}`)
  }
}
