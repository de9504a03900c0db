// The bench scenarios (a)–(h): what each sends, which processes it runs against, and the target it is judged by.
import type { Database, ScenarioId } from './settings.js'
import type { Workload } from './workload.js'

/** The processes a scenario may run against on one database. */
export type TargetName = 'service' | 'service-1m' | 'baseline' | 'reference'

/** What the workloads draw from, gathered after seeding. */
export interface ScenarioContext {
  /** Pets seeded with ids 1..seededPets. */
  seededPets: number
  /** Random first-page listPets paths (random limit and status). */
  listPaths: string[]
  /** Next-page paths taken from the service's own `Link` headers. */
  cursorPaths: string[]
}

/** How a scenario is judged: the median per-round ratio of `numerator` to `denominator` req/s is at least `min`. */
export interface Target {
  numerator: TargetName
  denominator: TargetName
  min: number
}

/** One scenario on the databases it runs on. */
export interface Scenario {
  id: ScenarioId
  title: string
  /** Per database: the processes it runs against (rotated from round to round), and its target if any. */
  on: Partial<Record<Database, { targets: TargetName[]; target?: Target }>>
  /** Whether p99 at a fixed rate of half the service's throughput is measured and judged (≤ 10 ms). */
  fixedRate: boolean
  workload(context: ScenarioContext): Workload
}

/** The body every createPet request sends. */
export const NEW_PET = JSON.stringify({ name: 'bench-pet', categoryId: 7, status: 'available' })
/** The pets seeded for every scenario but (f)'s large side. */
export const SEEDED_PETS = 10_000
/** The pets seeded for (f)'s large side. */
export const LARGE_PETS = 1_000_000
/** The highest p99 (ms) at half the saturated rate the target allows. */
export const FIXED_RATE_P99_MS = 10
/** The highest service peak RSS (MB, 10^6 bytes) the target allows. */
export const PEAK_RSS_MB = 100

const vsBaseline = (min: number): Target => ({ numerator: 'service', denominator: 'baseline', min })
const vsReference = (min: number): Target => ({ numerator: 'service', denominator: 'reference', min })
const all: TargetName[] = ['service', 'baseline', 'reference']
const one = (
  method: 'GET' | 'POST',
  path: string,
  expectedStatus: number,
  extra: { body?: string; authorized?: boolean } = {},
) => ({
  kinds: [{ weight: 1, method, paths: [path], expectedStatus, authorized: extra.authorized ?? true, body: extra.body }],
})

/** Every scenario, in letter order. */
export const SCENARIOS: Scenario[] = [
  {
    id: 'a',
    title: 'list 20',
    on: {
      sqlite: { targets: all, target: vsBaseline(0.4) },
      postgres: { targets: all, target: vsReference(1.5) },
    },
    fixedRate: true,
    workload: () => one('GET', '/v1/pets?limit=20', 200),
  },
  {
    id: 'b',
    title: 'list 100 by status',
    on: { sqlite: { targets: all, target: vsBaseline(0.25) } },
    fixedRate: false,
    workload: () => one('GET', '/v1/pets?limit=100&status=available', 200),
  },
  {
    id: 'c',
    title: 'create',
    on: {
      sqlite: { targets: all, target: vsBaseline(0.4) },
      postgres: { targets: ['service', 'baseline'] },
    },
    fixedRate: true,
    workload: () => one('POST', '/v1/pets', 201, { body: NEW_PET }),
  },
  {
    id: 'd',
    title: 'get by id',
    on: {
      sqlite: { targets: all, target: vsBaseline(0.75) },
      postgres: { targets: all, target: vsReference(1.5) },
    },
    fixedRate: true,
    workload: (context) => ({
      kinds: [
        {
          weight: 1,
          method: 'GET',
          paths: ['/v1/pets/'],
          idRange: [1, context.seededPets],
          authorized: true,
          expectedStatus: 200,
        },
      ],
    }),
  },
  {
    id: 'e',
    title: '401',
    on: { sqlite: { targets: all, target: vsBaseline(0.85) } },
    fixedRate: false,
    workload: () => one('GET', '/v1/pets', 401, { authorized: false }),
  },
  {
    id: 'f',
    title: 'list 20 sold, 1M rows vs 10k',
    on: {
      sqlite: { targets: ['service-1m', 'service'], target: { numerator: 'service-1m', denominator: 'service', min: 0.9 } },
    },
    fixedRate: false,
    workload: () => one('GET', '/v1/pets?limit=20&status=sold', 200),
  },
  {
    id: 'g',
    title: 'mixed 75/20/5',
    on: {
      sqlite: { targets: ['service', 'baseline'], target: vsBaseline(0.35) },
      postgres: { targets: ['service', 'baseline'] },
    },
    fixedRate: false,
    workload: (context) => ({
      kinds: [
        { weight: 37.5, method: 'GET', paths: context.listPaths, authorized: true, expectedStatus: 200 },
        { weight: 37.5, method: 'GET', paths: context.cursorPaths, authorized: true, expectedStatus: 200 },
        { weight: 20, method: 'POST', paths: ['/v1/pets'], body: NEW_PET, authorized: true, expectedStatus: 201 },
        {
          weight: 5,
          method: 'GET',
          paths: ['/v1/pets/'],
          idRange: [1, context.seededPets],
          authorized: true,
          expectedStatus: 200,
        },
      ],
    }),
  },
  {
    id: 'h',
    title: 'list 100 by status, gzip',
    // (b) with `Accept-Encoding: gzip`: the service compresses the 8 KB page (the baseline does not);
    // (h) against (b) is what compression costs. No target: compression is the client's choice.
    on: { sqlite: { targets: ['service', 'baseline'] } },
    fixedRate: false,
    workload: () => ({
      kinds: [
        {
          weight: 1,
          method: 'GET',
          paths: ['/v1/pets?limit=100&status=available'],
          authorized: true,
          acceptEncoding: 'gzip',
          expectedStatus: 200,
        },
      ],
    }),
  },
]
