// `npm run soak`: a bounded soak of the built service (node dist/cli.js serve, as a child process on 127.0.0.1) under
// mixed traffic at high concurrency, checking every response's status and sampling the service's RSS every second.
// It runs dist/ as it is: build first (`npm run build`). Exit code 1 on an unexpected status, a socket error or
// timeout, or a service that died; the figures are printed either way. RSS growth is reported against its target
// (< 10 %) but does not change the exit code.
//
// Settings (environment, each bounded):
//   SOAK_DURATION_S    measured seconds after the warm-up (default 300, 1–86400)
//   SOAK_CONNECTIONS   concurrent keep-alive connections (default 128, 1–1024)
//   SOAK_WARMUP_S      seconds of the same traffic before measuring (default 30, 0–3600); statuses are checked
//   SOAK_DATABASE_URL  the service's DATABASE_URL (e.g. postgres://…); default: a temporary SQLite file

import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { assertBuilt } from '../test/cli-process.js'
import { type Memory, readMemory, type ServerProcess, startServer } from './processes.js'
import { integerSetting, log, markdownTable, runScript, warn } from './report.js'
import { percentile } from './stats.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
/** Passed in API_KEYS, so no key is created at start-up. */
const API_KEY = 'soak-api-key-0123456789-abcdefghijklmnopqrstuvwxyz'
const WRONG_KEY = 'soak-wrong-key-0123456789-abcdefghijklmnopqrstuvw'
const SEED_PETS = 500
const SEED_CONCURRENCY = 8
/** Per-request timeout of the load generator, in seconds (the service's requestTimeout is 10 s too). */
const REQUEST_TIMEOUT_S = 10
/** RSS growth from after the warm-up to the end that the issue targets, in percent. */
const RSS_GROWTH_TARGET_PCT = 10
/** Seconds of samples whose median gives the smoothed RSS at a point (GC makes single samples noisy). */
const SMOOTHING_WINDOW_S = 10
const STATUSES = ['available', 'pending', 'sold'] as const

/** Soak settings; see the file header. */
interface Settings {
  durationS: number
  connections: number
  warmupS: number
  /** SOAK_DATABASE_URL, or undefined for a temporary SQLite file. */
  databaseUrl: string | undefined
}

function readSettings(env: NodeJS.ProcessEnv): Settings {
  const int = (name: string, fallback: number, min: number, max: number) => integerSetting(env, name, fallback, min, max)
  return {
    durationS: int('SOAK_DURATION_S', 300, 1, 86_400),
    connections: int('SOAK_CONNECTIONS', 128, 1, 1024),
    warmupS: int('SOAK_WARMUP_S', 30, 0, 3600),
    databaseUrl: env.SOAK_DATABASE_URL || undefined,
  }
}

// --- autocannon (9 ships no types): the parts used here -------------------------------------------------------

interface AutocannonRequest {
  method: 'GET' | 'POST'
  path: string
  headers: Record<string, string>
  body?: string
  setupRequest?: (request: AutocannonRequest) => AutocannonRequest
  onResponse?: (status: number) => void
}

interface AutocannonResult {
  errors: number
  timeouts: number
  statusCodeStats: Record<string, { count: number }>
}

type AutocannonInstance = PromiseLike<AutocannonResult> & {
  on(event: 'response', listener: (client: unknown, status: number, bytes: number, latencyMs: number) => void): void
  stop(): void
}

const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string
  connections: number
  duration: number
  timeout: number
  requests: AutocannonRequest[]
  setupClient: (client: { setRequests(requests: AutocannonRequest[]): void }) => void
}) => AutocannonInstance

// --- the traffic mix ---------------------------------------------------------------------------------------------

/** One kind of request and the only status it may get. */
interface Kind {
  name: string
  expectedStatus: number
  /** Slots out of SLOTS in the request cycle. */
  slots: number
  requests: (slot: number) => Omit<AutocannonRequest, 'onResponse'>
}

const SLOTS = 100

function buildKinds(seededIds: readonly string[]): Kind[] {
  const authorized = { authorization: `Bearer ${API_KEY}` }
  const json = { 'content-type': 'application/json' }
  let created = 0
  let read = 0
  const newPet = () => {
    created++
    // Some categoryIds above 2^53, which the service must keep exact.
    const categoryId = created % 10 === 0 ? '9007199254740993' : String(created % 50)
    return `{"name":"soak-${created}","categoryId":${categoryId},"status":"${STATUSES[created % 3]}"}`
  }
  const limits = [1, 5, 20, 50, 100]
  return [
    {
      name: 'listPets',
      expectedStatus: 200,
      slots: 67,
      requests: (slot) => {
        const limit = limits[slot % limits.length]
        const status = [undefined, ...STATUSES][Math.floor(slot / limits.length) % 4]
        return { method: 'GET', path: `/v1/pets?limit=${limit}${status ? `&status=${status}` : ''}`, headers: authorized }
      },
    },
    {
      name: 'createPet',
      expectedStatus: 201,
      slots: 19,
      requests: () => ({
        method: 'POST',
        path: '/v1/pets',
        headers: { ...authorized, ...json },
        setupRequest: (request) => ({ ...request, body: newPet() }),
      }),
    },
    {
      name: 'getPet',
      expectedStatus: 200,
      slots: 10,
      requests: () => ({
        method: 'GET',
        path: '/v1/pets/1',
        headers: authorized,
        setupRequest: (request) => ({ ...request, path: `/v1/pets/${seededIds[read++ % seededIds.length]}` }),
      }),
    },
    { name: '401 no key', expectedStatus: 401, slots: 1, requests: () => ({ method: 'GET', path: '/v1/pets', headers: {} }) },
    {
      name: '401 wrong key',
      expectedStatus: 401,
      slots: 1,
      // A POST whose body the service never reads (auth fails first): the connection must stay usable.
      requests: () => ({
        method: 'POST',
        path: '/v1/pets',
        headers: { authorization: `Bearer ${WRONG_KEY}`, ...json },
        body: '{"name":"never stored","categoryId":1}',
      }),
    },
    {
      name: '400 invalid body',
      expectedStatus: 400,
      slots: 1,
      requests: () => ({
        method: 'POST',
        path: '/v1/pets',
        headers: { ...authorized, ...json },
        body: '{"categoryId":7,"colour":"red"}',
      }),
    },
    {
      name: '400 invalid query',
      expectedStatus: 400,
      slots: 1,
      requests: () => ({ method: 'GET', path: '/v1/pets?limit=0&status=lost', headers: authorized }),
    },
  ]
}

/** Per-kind counts and latencies, for one phase. */
interface Tally {
  statuses: Map<number, number>
  latencies: number[]
}

type Phase = 'warmup' | 'measured'

// --- the run ---------------------------------------------------------------------------------------------------

let service: ServerProcess | undefined
let tmp: string | undefined

/** Stops the service (by PID) and removes the temporary folder; safe to call twice. */
async function cleanUp(): Promise<void> {
  await service?.stop()
  if (tmp) rmSync(tmp, { recursive: true, force: true })
}

async function main(): Promise<void> {
  const settings = readSettings(process.env)
  const cpu = cpus()
  log(`# Animal Store soak, ${new Date().toISOString()}`)
  log(`node ${process.version}, ${cpu.length} × ${cpu[0]?.model ?? '?'}, load average ${loadavg()[0]?.toFixed(2)}`)
  log('the load generator (autocannon) runs in this process, on the same cores as the service')
  // The soak runs dist/ as built; it never builds.
  if (!existsSync(join(ROOT, 'dist/cli.js'))) throw new Error('dist/cli.js is missing: run `npm run build` first.')
  assertBuilt()
  tmp = mkdtempSync(join(tmpdir(), 'animal-store-soak-'))
  try {
    await run(settings, tmp)
  } finally {
    await cleanUp()
  }
}

async function run(settings: Settings, dir: string): Promise<void> {
  const databaseUrl = settings.databaseUrl ?? `sqlite:${join(dir, 'soak.db')}`
  log(
    `database: ${settings.databaseUrl ? `SOAK_DATABASE_URL ${hidePassword(databaseUrl)}` : `temporary SQLite file ${databaseUrl}`}; ` +
      `${settings.connections} connections; warm-up ${settings.warmupS} s, then ${settings.durationS} s measured`,
  )
  const stdoutFile = join(dir, 'service.out')
  service = await startServer('service', ['dist/cli.js', 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      API_KEYS: API_KEY,
      LOG_LEVEL: 'warn',
      // The per-key rate limit off: one key sends all the traffic.
      RATE_LIMIT_PER_MINUTE: '0',
      WORKERS: '1',
      METRICS_PORT: '0',
    },
    stdoutFile,
  })
  const { pid, origin } = service
  // GET /metrics has its own listener; `serve` prints where before its listening line.
  const metricsOrigin = /^Prometheus metrics on (http:\/\/\S+)\/metrics$/m.exec(readFileSync(stdoutFile, 'utf8'))?.[1] ?? origin
  log(`service: pid ${pid}, ${origin}, metrics at ${metricsOrigin}/metrics`)

  // RSS sampled every second from now on; `died` once /proc no longer shows the process.
  const startedAt = performance.now()
  const samples: Array<{ t: number; rssKiB: number }> = []
  let died: string | undefined
  let onDeath = () => {}
  const sample = (): Memory | undefined => {
    const memory = readMemory(pid)
    if (memory === undefined || Number.isNaN(memory.rssKiB)) {
      died ??= `the service (pid ${pid}) was gone ${((performance.now() - startedAt) / 1000).toFixed(1)} s after start`
      onDeath()
      return undefined
    }
    samples.push({ t: (performance.now() - startedAt) / 1000, rssKiB: memory.rssKiB })
    return memory
  }
  const atStart = sample()
  const sampler = setInterval(sample, 1000)

  try {
    const seedStart = performance.now()
    const seededIds = await seed(origin)
    log(`seeded ${seededIds.length} pets in ${Math.round(performance.now() - seedStart)} ms`)
    const afterSeeding = sample()

    const kinds = buildKinds(seededIds)
    const tallies = new Map<string, Record<Phase, Tally>>()
    for (const kind of kinds) {
      const fresh = (): Tally => ({ statuses: new Map(), latencies: [] })
      tallies.set(kind.name, { warmup: fresh(), measured: fresh() })
    }
    let phase: Phase = settings.warmupS > 0 ? 'warmup' : 'measured'
    // autocannon calls a request's onResponse and then emits 'response' (with the latency) for the same response,
    // synchronously: `answered` carries the kind from one to the other.
    let answered: Tally | undefined
    const requests = cycle(kinds).map(({ kind, slot }) => {
      const tally = tallies.get(kind.name)
      return {
        ...kind.requests(slot),
        onResponse: (status: number) => {
          if (!tally) return
          answered = tally[phase]
          answered.statuses.set(status, (answered.statuses.get(status) ?? 0) + 1)
        },
      }
    })

    const totalS = settings.warmupS + settings.durationS
    let clients = 0
    const instance = autocannon({
      url: origin,
      connections: settings.connections,
      duration: totalS,
      timeout: REQUEST_TIMEOUT_S,
      requests,
      // Every connection walks the same cycle from its own offset, so any stretch of the run has the full mix.
      setupClient: (client) => {
        const offset = Math.floor((clients++ * SLOTS) / settings.connections) % SLOTS
        client.setRequests([...requests.slice(offset), ...requests.slice(0, offset)].map((request) => ({ ...request })))
      },
    })
    onDeath = () => instance.stop()
    instance.on('response', (_client, _status, _bytes, latencyMs) => {
      answered?.latencies.push(latencyMs)
      answered = undefined
    })
    const loadStart = performance.now()
    let measuredStart = loadStart
    let afterWarmup: { memory: Memory | undefined; inside: Inside | undefined } = { memory: afterSeeding, inside: undefined }
    const warmupTimer = setTimeout(async () => {
      phase = 'measured'
      measuredStart = performance.now()
      afterWarmup = { memory: sample(), inside: await inside(metricsOrigin, pid) }
      log(`warm-up done (${settings.warmupS} s)`)
    }, settings.warmupS * 1000)
    // A bound on the whole load phase, should autocannon not stop by itself.
    const watchdog = setTimeout(
      () => {
        died ??= `the load did not stop within ${totalS + 120} s`
        instance.stop()
      },
      (totalS + 120) * 1000,
    )
    const progress = setInterval(() => {
      const last = samples.at(-1)
      log(`  ${Math.round((performance.now() - loadStart) / 1000)} s: service RSS ${mib(last?.rssKiB)} MiB`)
    }, 60_000)
    const result = await instance
    const loadEnd = performance.now()
    clearTimeout(warmupTimer)
    clearTimeout(watchdog)
    clearInterval(progress)
    const atEnd = sample()
    const insideAtEnd = died ? undefined : await inside(metricsOrigin, pid)
    clearInterval(sampler)
    const alive = readMemory(pid) !== undefined
    if (!alive) died ??= `the service (pid ${pid}) was gone after the load`
    const warmupAt = (measuredStart - startedAt) / 1000
    const endAt = (loadEnd - startedAt) / 1000

    report({
      settings,
      kinds,
      tallies,
      result,
      measuredS: (loadEnd - measuredStart) / 1000,
      memory: { atStart, afterSeeding, afterWarmup: afterWarmup.memory, atEnd },
      inside: { afterWarmup: afterWarmup.inside, atEnd: insideAtEnd },
      databaseFiles: settings.databaseUrl ? undefined : databaseFiles(databaseUrl.slice('sqlite:'.length)),
      samples,
      smoothed: { afterWarmup: windowMedian(samples, warmupAt), atEnd: windowMedian(samples, endAt - SMOOTHING_WINDOW_S) },
      serviceLog: readFileSync(stdoutFile, 'utf8'),
      died,
    })
  } finally {
    clearInterval(sampler)
  }
}

/** Creates SEED_PETS pets (SEED_CONCURRENCY at a time); resolves to their ids (exact digits). */
async function seed(origin: string): Promise<string[]> {
  const ids: string[] = []
  let next = 0
  const worker = async () => {
    while (next < SEED_PETS) {
      const index = next++
      const response = await fetch(`${origin}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: `seed-${index}`, categoryId: index % 7, status: STATUSES[index % 3] }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_S * 1000),
      })
      const text = await response.text()
      const id = /"id":(\d+)/.exec(text)?.[1]
      if (response.status !== 201 || id === undefined)
        throw new Error(`seeding: POST /v1/pets answered ${response.status} ${text}`)
      ids.push(id)
    }
  }
  await Promise.all(Array.from({ length: SEED_CONCURRENCY }, worker))
  return ids
}

/** The request cycle: each kind in its number of slots, interleaved by a fixed shuffle so that every stretch mixes. */
function cycle(kinds: Kind[]): Array<{ kind: Kind; slot: number }> {
  const slots = kinds.flatMap((kind) => Array.from({ length: kind.slots }, (_, slot) => ({ kind, slot })))
  if (slots.length !== SLOTS) throw new Error(`the mix has ${slots.length} slots, not ${SLOTS}`)
  let state = 0x5eed
  const random = () => {
    // mulberry32: a fixed sequence, so every run sends the same cycle.
    state = (state + 0x6d2b79f5) | 0
    let t = Math.imul(state ^ (state >>> 15), 1 | state)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  for (let index = slots.length - 1; index > 0; index--) {
    const other = Math.floor(random() * (index + 1))
    const swap = slots[index]
    const with_ = slots[other]
    if (swap && with_) [slots[index], slots[other]] = [with_, swap]
  }
  return slots
}

/** Where the service's memory is (bytes, from GET /metrics and /proc/PID/status), and its event-loop delay. */
interface Inside {
  heapUsed: number
  heapTotal: number
  external: number
  /** The longest event-loop delay since the previous scrape (prom-client resets it on every scrape), seconds. */
  loopDelayMax: number
  rssAnon: number
  rssFile: number
  rssShmem: number
}

/** Reads Inside; NaN for what cannot be read (metrics off, process gone). */
async function inside(metricsOrigin: string, pid: number): Promise<Inside> {
  let text = ''
  try {
    const response = await fetch(`${metricsOrigin}/metrics`, { signal: AbortSignal.timeout(5000) })
    text = await response.text()
  } catch {}
  const metric = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? Number.NaN)
  let status = ''
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {}
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
  return {
    heapUsed: metric('nodejs_heap_size_used_bytes'),
    heapTotal: metric('nodejs_heap_size_total_bytes'),
    external: metric('nodejs_external_memory_bytes'),
    loopDelayMax: metric('nodejs_eventloop_lag_max_seconds'),
    rssAnon: kib('RssAnon'),
    rssFile: kib('RssFile'),
    rssShmem: kib('RssShmem'),
  }
}

/** Sizes (bytes) of the SQLite database file and its WAL, or undefined. */
function databaseFiles(path: string): { database: number; wal: number } | undefined {
  try {
    const size = (file: string) => (existsSync(file) ? statSync(file).size : 0)
    return { database: size(path), wal: size(`${path}-wal`) }
  } catch {
    return undefined
  }
}

/** The median RSS (KiB) of the samples in [from, from + SMOOTHING_WINDOW_S) seconds. */
function windowMedian(samples: ReadonlyArray<{ t: number; rssKiB: number }>, from: number): number {
  const values = samples
    .filter((each) => each.t >= from && each.t < from + SMOOTHING_WINDOW_S)
    .map((each) => each.rssKiB)
    .sort((a, b) => a - b)
  return percentile(values, 50)
}

// --- the report ------------------------------------------------------------------------------------------------

interface Figures {
  settings: Settings
  kinds: Kind[]
  tallies: Map<string, Record<Phase, Tally>>
  result: AutocannonResult
  measuredS: number
  memory: Record<'atStart' | 'afterSeeding' | 'afterWarmup' | 'atEnd', Memory | undefined>
  inside: { afterWarmup: Inside | undefined; atEnd: Inside | undefined }
  databaseFiles: { database: number; wal: number } | undefined
  samples: Array<{ t: number; rssKiB: number }>
  smoothed: { afterWarmup: number; atEnd: number }
  serviceLog: string
  died: string | undefined
}

function report(figures: Figures): void {
  const { kinds, tallies, result, measuredS, memory, samples } = figures
  const measured = (name: string) => tallies.get(name)?.measured ?? { statuses: new Map<number, number>(), latencies: [] }
  const warmup = (name: string) => tallies.get(name)?.warmup ?? { statuses: new Map<number, number>(), latencies: [] }
  const count = (tally: Tally) => [...tally.statuses.values()].reduce((sum, each) => sum + each, 0)
  const unexpectedIn = (tally: Tally, kind: Kind) =>
    [...tally.statuses].filter(([status]) => status !== kind.expectedStatus).reduce((sum, [, each]) => sum + each, 0)
  const statusList = (statuses: Map<number, number>) =>
    [...statuses]
      .sort(([a], [b]) => a - b)
      .map(([status, each]) => `${status}×${each}`)
      .join(', ') || '-'

  let all: number[] = []
  const rows = kinds.map((kind) => {
    const tally = measured(kind.name)
    const sorted = [...tally.latencies].sort((a, b) => a - b)
    // concat, not push(...sorted): hundreds of thousands of arguments overflow the stack.
    all = all.concat(sorted)
    return [
      kind.name,
      `${kind.slots}%`,
      String(kind.expectedStatus),
      String(count(tally)),
      statusList(tally.statuses),
      String(unexpectedIn(tally, kind)),
      ms(percentile(sorted, 50)),
      ms(percentile(sorted, 99)),
      ms(sorted.at(-1)),
    ]
  })
  all.sort((a, b) => a - b)
  const total = kinds.reduce((sum, kind) => sum + count(measured(kind.name)), 0)
  const totalStatuses = new Map<number, number>()
  for (const kind of kinds) {
    for (const [status, each] of measured(kind.name).statuses) totalStatuses.set(status, (totalStatuses.get(status) ?? 0) + each)
  }
  const unexpected = kinds.reduce((sum, kind) => sum + unexpectedIn(measured(kind.name), kind), 0)
  const unexpectedWarmup = kinds.reduce((sum, kind) => sum + unexpectedIn(warmup(kind.name), kind), 0)
  const warmupTotal = kinds.reduce((sum, kind) => sum + count(warmup(kind.name)), 0)
  rows.push([
    '**all**',
    '100%',
    '',
    String(total),
    statusList(totalStatuses),
    String(unexpected),
    ms(percentile(all, 50)),
    ms(percentile(all, 99)),
    ms(all.at(-1)),
  ])

  log(`\n## Traffic: ${measuredS.toFixed(1)} s measured after the warm-up\n`)
  log(
    markdownTable(
      ['request kind', 'share', 'expected', 'requests', 'statuses', 'unexpected', 'p50 ms', 'p99 ms', 'max ms'],
      rows,
    ),
  )
  log(`\ntotal requests ${total} in ${measuredS.toFixed(1)} s: ${Math.round(total / measuredS)} req/s`)
  log(`counts by status: ${statusList(totalStatuses)}`)
  log(
    `UNEXPECTED statuses: ${unexpected} measured, ${unexpectedWarmup} during the warm-up (${warmupTotal} requests); ` +
      `socket errors ${result.errors}, timeouts ${result.timeouts} (whole run)`,
  )
  // autocannon's own count per status, over the whole run (warm-up included), as a cross-check of the tallies.
  const autocannonTotal = Object.values(result.statusCodeStats).reduce((sum, each) => sum + each.count, 0)
  if (autocannonTotal !== total + warmupTotal) {
    warn(`autocannon counted ${autocannonTotal} responses, the per-kind tallies ${total + warmupTotal}`)
  }

  const rss = (each: Memory | undefined) => each?.rssKiB
  const peak = samples.reduce<{ t: number; rssKiB: number } | undefined>(
    (max, each) => (max && max.rssKiB >= each.rssKiB ? max : each),
    undefined,
  )
  const maxSampled = peak?.rssKiB ?? Number.NaN
  const growth = percentChange(rss(memory.afterWarmup), rss(memory.atEnd))
  const smoothedGrowth = percentChange(figures.smoothed.afterWarmup, figures.smoothed.atEnd)
  log(`\n## Service memory (VmRSS from /proc/${service?.pid}/status, sampled every second: ${samples.length} samples)\n`)
  log(
    markdownTable(
      ['point', 'RSS MiB'],
      [
        ['start (ready, before seeding)', mib(rss(memory.atStart))],
        ['after seeding', mib(rss(memory.afterSeeding))],
        ['after warm-up', mib(rss(memory.afterWarmup))],
        ['end of load', mib(rss(memory.atEnd))],
        [`max sampled (at ${peak ? Math.round(peak.t) : '?'} s)`, mib(maxSampled)],
        ['VmHWM (kernel peak) at the end', mib(memory.atEnd?.hwmKiB)],
      ],
    ),
  )
  const met = growth !== undefined && growth < RSS_GROWTH_TARGET_PCT
  log(
    `\nRSS growth after warm-up → end: ${signed(growth)} (target < ${RSS_GROWTH_TARGET_PCT}%: ${met ? 'met' : 'NOT MET'}); ` +
      `medians of ${SMOOTHING_WINDOW_S} s windows: ${mib(figures.smoothed.afterWarmup)} → ${mib(figures.smoothed.atEnd)} MiB (${signed(smoothedGrowth)})`,
  )
  const { afterWarmup, atEnd } = figures.inside
  const breakdown = (label: string, key: keyof Inside) => [
    label,
    mibBytes(afterWarmup?.[key]),
    mibBytes(atEnd?.[key]),
    signedMib(afterWarmup?.[key], atEnd?.[key]),
  ]
  log('\nWhere the memory is (GET /metrics and /proc/PID/status):\n')
  log(
    markdownTable(
      ['MiB', 'after warm-up', 'end', 'change'],
      [
        breakdown('RssAnon (heap, malloc)', 'rssAnon'),
        breakdown('RssFile (mapped files: code, SQLite -shm)', 'rssFile'),
        breakdown('RssShmem (shared memory)', 'rssShmem'),
        breakdown('V8 heap used', 'heapUsed'),
        breakdown('V8 heap total (reserved by V8)', 'heapTotal'),
        breakdown('external (Buffers, native)', 'external'),
      ],
    ),
  )
  log(
    `\nservice event-loop delay, longest (nodejs_eventloop_lag_max_seconds): from start-up to the end of the warm-up ` +
      `${ms((afterWarmup?.loopDelayMax ?? Number.NaN) * 1000)} ms, measured phase ${ms((atEnd?.loopDelayMax ?? Number.NaN) * 1000)} ms`,
  )
  if (figures.databaseFiles) {
    log(
      `SQLite files at the end: database ${mibBytes(figures.databaseFiles.database)} MiB, ` +
        `WAL ${mibBytes(figures.databaseFiles.wal)} MiB`,
    )
  }
  const timeline = samples.filter((_, index) => index % 30 === 0 || index === samples.length - 1)
  log(`RSS every 30 s (s: MiB): ${timeline.map((each) => `${Math.round(each.t)}: ${mib(each.rssKiB)}`).join(', ')}`)

  const logged = figures.serviceLog.split('\n').filter((line) => /"level":(4|5|6)0/.test(line))
  const messages = new Map<string, number>()
  for (const line of logged) {
    const message = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 120)
    messages.set(message, (messages.get(message) ?? 0) + 1)
  }
  log(
    `service log lines at warn or above: ${logged.length}${
      logged.length ? ` (${[...messages].map(([message, each]) => `"${message}"×${each}`).join(', ')})` : ''
    }`,
  )

  const failures = [
    unexpected + unexpectedWarmup > 0 && `${unexpected + unexpectedWarmup} unexpected statuses`,
    result.errors + result.timeouts > 0 && `${result.errors} socket errors and ${result.timeouts} timeouts`,
    total === 0 && 'no responses at all',
    figures.died,
  ].filter((each): each is string => Boolean(each))
  log(`\nRESULT: ${failures.length === 0 ? 'PASS' : `FAIL (${failures.join('; ')})`}`)
  if (failures.length > 0) process.exitCode = 1
}

function percentChange(from: number | undefined, to: number | undefined): number | undefined {
  if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to) || from === 0) return undefined
  return ((to - from) / from) * 100
}

function signed(value: number | undefined): string {
  return value === undefined ? '?' : `${value >= 0 ? '+' : ''}${value.toFixed(1)}%`
}

function ms(value: number | undefined): string {
  return value === undefined || Number.isNaN(value) ? '-' : value.toFixed(2)
}

function mib(kib: number | undefined): string {
  return kib === undefined || !Number.isFinite(kib) || kib === 0 ? '?' : (kib / 1024).toFixed(1)
}

function mibBytes(bytes: number | undefined): string {
  return bytes === undefined || !Number.isFinite(bytes) ? '?' : (bytes / 1024 / 1024).toFixed(1)
}

function signedMib(from: number | undefined, to: number | undefined): string {
  if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to)) return '?'
  const change = (to - from) / 1024 / 1024
  return `${change >= 0 ? '+' : ''}${change.toFixed(1)}`
}

/** The URL with its password replaced by `***`. */
function hidePassword(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.href
  } catch {
    return '(unparsable URL)'
  }
}

runScript('soak', main, cleanUp)
