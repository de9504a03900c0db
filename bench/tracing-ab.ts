// What tracing costs on getPet: `serve` builds A/B'd with wrk on 127.0.0.1, in alternating rounds,
// medians reported, with the server's CPU time per request (docs/benchmarks.md, "Tracing: cost off and on"). Variants: this build with
// tracing off, this build with tracing on (every request sampled, or one in ten; spans sent to an
// OTLP/HTTP sink in this process), and optionally another build's dist/cli.js as the baseline
// (`--baseline PATH`).
// Usage: npx tsx bench/tracing-ab.ts [--baseline ../other/dist/cli.js] [--rounds 5] [--seconds 10]
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'

const { values } = parseArgs({
  options: { baseline: { type: 'string' }, rounds: { type: 'string', default: '5' }, seconds: { type: 'string', default: '10' } },
})
const ROUNDS = Number(values.rounds)
const SECONDS = Number(values.seconds)
const CONNECTIONS = 16
const KEY = 'Bench-Tr4cing-k7Qz9-Lm2Xp-Rv8Tb-Hd5Nc'
const HERE = fileURLToPath(new URL('..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'animal-store-tracing-ab-'))

interface Variant {
  name: string
  cli: string
  env: Record<string, string>
}

// The OTLP sink: accepts every export, keeps nothing (a collector's cost is not the service's).
let exports = 0
const sink = createServer((request, response) => {
  request.resume()
  request.on('end', () => {
    exports++
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()
  })
})
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve))
const sinkAddress = sink.address()
const sinkUrl = `http://127.0.0.1:${typeof sinkAddress === 'object' && sinkAddress ? sinkAddress.port : 0}`

const variants: Variant[] = [
  ...(values.baseline ? [{ name: 'baseline', cli: values.baseline, env: {} }] : []),
  { name: 'off', cli: join(HERE, 'dist', 'cli.js'), env: {} },
  { name: 'on', cli: join(HERE, 'dist', 'cli.js'), env: { OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl } },
  {
    name: 'on, 10 % sampled',
    cli: join(HERE, 'dist', 'cli.js'),
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: sinkUrl,
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.1',
    },
  },
]

/** Starts a variant on a fresh SQLite file with one pet; resolves with its origin and process. */
async function start(variant: Variant): Promise<{ origin: string; child: ChildProcess }> {
  const file = variant.name.replace(/\W+/g, '-')
  const log = join(dir, `${file}.log`)
  const child = spawn(process.execPath, [variant.cli, 'serve'], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      DATABASE_URL: `sqlite:${join(dir, `${file}.db`)}`,
      API_KEYS: KEY,
      RATE_LIMIT_PER_MINUTE: '0',
      ...variant.env,
    },
    stdio: ['ignore', openSync(log, 'w'), 'inherit'],
  })
  for (let waited = 0; waited < 30_000; waited += 100) {
    const port = /listening on http:\/\/127\.0\.0\.1:(\d+)\/v1/.exec(readFileSync(log, 'utf8'))?.[1]
    if (port) {
      const origin = `http://127.0.0.1:${port}`
      const created = await fetch(`${origin}/v1/pets`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: '{"name":"Rex","categoryId":1}',
      })
      if (created.status !== 201) throw new Error(`${variant.name}: create answered ${created.status}`)
      return { origin, child }
    }
    await delay(100)
  }
  child.kill('SIGKILL')
  throw new Error(`${variant.name} did not start`)
}

/** CPU time (user + system) the process `pid` has used so far, in ms (Linux /proc; clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10
}

interface Run {
  rps: number
  p50: number
  p99: number
  /** Server CPU per request, in µs: robust to other load on the machine, unlike req/s. */
  cpuUs: number
}

/** One wrk run against getPet on the server `pid`; resolves to req/s, p50/p99 in ms and its CPU per request. */
async function wrk(origin: string, pid: number): Promise<Run> {
  const cpuBefore = cpuMs(pid)
  const { stdout } = await promisify(execFile)(
    'wrk',
    ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '--latency', '-H', `Authorization: Bearer ${KEY}`, `${origin}/v1/pets/1`],
    { timeout: (SECONDS + 30) * 1000 },
  )
  if (/Non-2xx/.test(stdout)) throw new Error(`non-2xx answers:\n${stdout}`)
  const ms = (label: string) => {
    const match = new RegExp(`${label}%\\s+([\\d.]+)(us|ms|s)`).exec(stdout)
    if (!match) throw new Error(`no ${label}% in:\n${stdout}`)
    const unit = match[2] === 'us' ? 0.001 : match[2] === 's' ? 1000 : 1
    return Number(match[1]) * unit
  }
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1])
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]),
    p50: ms('50'),
    p99: ms('99'),
    cpuUs: ((cpuMs(pid) - cpuBefore) * 1000) / requests,
  }
}

const median = (numbers: number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

const running = await Promise.all(variants.map(async (variant) => ({ variant, ...(await start(variant)) })))
try {
  for (const { origin, child } of running) await wrk(origin, child.pid ?? 0).catch(() => undefined) // warm-up, not counted
  const results = new Map<string, Run[]>(variants.map((v) => [v.name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order each round, so no variant always runs first or right after another.
    const order = running.map((_, i) => running[(i + round) % running.length] as (typeof running)[number])
    for (const { variant, origin, child } of order) {
      const result = await wrk(origin, child.pid ?? 0)
      results.get(variant.name)?.push(result)
      process.stdout.write(
        `round ${round + 1} ${variant.name}: ${result.rps.toFixed(0)} req/s p50 ${result.p50} ms p99 ${result.p99} ms, ${result.cpuUs.toFixed(1)} µs CPU/request\n`,
      )
    }
  }
  const referenceName = values.baseline ? 'baseline' : 'off'
  const reference = results.get(referenceName) ?? []
  const ratio = (runs: Run[], of: (run: Run) => number) =>
    median(runs.map((run, i) => of(run) / of(reference[i] ?? { rps: Number.NaN, p50: 0, p99: 0, cpuUs: Number.NaN })))
  process.stdout.write(
    `\n| Variant | req/s (median of ${ROUNDS}) | p50 ms | p99 ms | CPU µs/request | req/s ÷ ${referenceName} | CPU ÷ ${referenceName} |\n|---|---|---|---|---|---|---|\n`,
  )
  for (const [name, runs] of results) {
    const m = (of: (run: Run) => number) => median(runs.map(of))
    process.stdout.write(
      `| ${name} | ${m((r) => r.rps).toFixed(0)} | ${m((r) => r.p50).toFixed(2)} | ${m((r) => r.p99).toFixed(2)} | ${m((r) => r.cpuUs).toFixed(1)} | ${ratio(runs, (r) => r.rps).toFixed(3)} | ${ratio(runs, (r) => r.cpuUs).toFixed(3)} |\n`,
    )
  }
  process.stdout.write(`\nOTLP exports received: ${exports}\n`)
} finally {
  for (const { child } of running) child.kill('SIGTERM')
  await delay(500)
  for (const { child } of running) if (child.exitCode === null) child.kill('SIGKILL')
  sink.close()
  rmSync(dir, { recursive: true, force: true })
}
