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

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { assertBuilt } from '../test/cli-process.js'
import { type Memory, readMemory, type ServerProcess, startServer } from './processes.js'
import { log, runScript } from './report.js'
import { autocannon } from './soak-autocannon.js'
import { databaseFiles, type Inside, inside, windowMedian } from './soak-memory.js'
import { mib, report } from './soak-report.js'
import { seed } from './soak-seed.js'
import { API_KEY, REQUEST_TIMEOUT_S, readSettings, type Settings, SMOOTHING_WINDOW_S } from './soak-settings.js'
import { buildKinds, cycle, type Phase, SLOTS, type Tally } from './soak-traffic.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

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
      pid,
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
