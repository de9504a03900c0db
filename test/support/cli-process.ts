// Runs the built CLI (`node dist/cli.js …`) as a child process for the CLI, durability and lifecycle
// tests: one-shot commands with a bounded run time, and `serve` on 127.0.0.1 with an ephemeral port.
import assert from 'node:assert/strict'
import { type ChildProcess, spawn } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { within } from '../../scripts/lib/wait.js'

export { connectionRefused, within } from '../../scripts/lib/wait.js'

/** The repository root, where the CLI runs from. */
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** The built CLI entry point. */
const CLI = join(REPO_ROOT, 'dist', 'cli.js')
/** The line `serve` prints once it listens; group 1 is the port. */
const LISTENING = /^Animal Store listening on http:\/\/127\.0\.0\.1:(\d+)\/v1 /m
/** The line `serve` prints, before LISTENING, when metrics are on; group 1 is the metrics origin. */
const METRICS_LISTENING = /^Prometheus metrics on (http:\/\/[^/\s]+)\/metrics$/m
/** The shape of a generated API key. */
export const GENERATED_KEY = /^ask_[A-Za-z0-9_-]{43}$/

/** Fails unless every src/**\/*.ts has a dist/**\/*.js at least as new: the tests run the build, not the sources. */
export function assertBuilt(): void {
  const src = join(REPO_ROOT, 'src')
  const stale: string[] = []
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.ts')) {
        const built = join(REPO_ROOT, 'dist', relative(src, path).replace(/\.ts$/, '.js'))
        let builtAt = 0
        try {
          builtAt = statSync(built).mtimeMs
        } catch {}
        if (builtAt < statSync(path).mtimeMs) stale.push(relative(REPO_ROOT, path))
      }
    }
  }
  walk(src)
  assert.deepEqual(stale, [], 'dist/ is missing or older than src/: run `npx tsc -p .` (or `npm test`, which builds first)')
}

/**
 * A clean environment for the CLI: PATH plus `variables`, so nothing leaks in from the test runner;
 * METRICS_PORT=0 unless given, so that servers started at once do not compete for port 9464; and
 * under scripts/test.ts, Node's compile cache in that run's own folder (TEST_COMPILE_CACHE).
 */
export function cliEnv(variables: Record<string, string>): NodeJS.ProcessEnv {
  const cache = process.env.TEST_COMPILE_CACHE
  return { PATH: process.env.PATH ?? '', METRICS_PORT: '0', ...(cache ? { NODE_COMPILE_CACHE: cache } : {}), ...variables }
}

/** How a child process ended and what it printed. */
interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

/** A finished one-shot command. */
export interface CliResult extends Exit {
  stdout: string
  stderr: string
}

const running = new Set<ChildProcess>()

/** Sends SIGKILL, by PID, to every child these helpers started that has not exited; for `after` hooks. */
export function killLeftovers(): void {
  for (const child of running) {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  }
  running.clear()
}

function track(child: ChildProcess): Promise<Exit> {
  running.add(child)
  return new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    })
  })
}

/**
 * Runs `node dist/cli.js ...args` (or another release's `cli`) to completion; SIGKILLs it (by PID) and
 * fails after `timeoutMs`.
 */
export async function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 15_000, cli = CLI): Promise<CliResult> {
  const child = spawn(process.execPath, [cli, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = track(child)
  try {
    const exit = await within(exited, timeoutMs, `animal-store ${args.join(' ')} did not exit`)
    return { ...exit, stdout, stderr }
  } finally {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL')
  }
}

/** A running `animal-store serve`. */
export interface ServeProcess {
  pid: number
  port: number
  /** `http://127.0.0.1:PORT` */
  origin: string
  /** `http://HOST:METRICS_PORT`, where GET /metrics is served; undefined when metrics are off. */
  metricsOrigin: string | undefined
  /** Everything printed so far. */
  stdout(): string
  stderr(): string
  /** Settles when the process has exited and its output is closed. */
  exited: Promise<Exit>
  /** Resolves with the first stdout line matching `pattern` (seen so far or later); rejects after `timeoutMs`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>
  /** Sends `signal` by PID and resolves with the exit; SIGKILLs it and rejects if it outlives `timeoutMs`. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>
  /** SIGKILL by PID if it is still running; for finally hooks. */
  kill(): void
}

/**
 * Starts `node dist/cli.js serve` (or `cli`, another release's) on 127.0.0.1 with PORT=0 and METRICS_PORT=0 (overridable
 * through `env`) and resolves once it prints its listening line; rejects with its output if it exits or is silent for `timeoutMs`.
 * `detached` starts it in a process group of its own, whose id is its pid: `process.kill(-pid, signal)` then signals
 * it and its children (WORKERS) together, as a supervisor does.
 */
export async function startServe(
  env: NodeJS.ProcessEnv,
  timeoutMs = 15_000,
  cli = CLI,
  { detached = false }: { detached?: boolean } = {},
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [cli, 'serve'], {
    cwd: REPO_ROOT,
    detached,
    env: { PORT: '0', HOST: '127.0.0.1', METRICS_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const pid = child.pid
  assert.ok(pid, 'serve did not start')
  let stdout = ''
  let stderr = ''
  const waiters = new Set<() => void>()
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
    for (const wake of waiters) wake()
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const exited = track(child)
  const alive = () => child.exitCode === null && child.signalCode === null
  const kill = () => {
    if (alive()) process.kill(pid, 'SIGKILL')
  }

  const waitForLine = (pattern: RegExp, ms = 10_000): Promise<string> => {
    const find = () => stdout.split('\n').find((line) => pattern.test(line))
    let wake = () => {}
    const seen = new Promise<string>((resolve, reject) => {
      wake = () => {
        const line = find()
        if (line !== undefined) resolve(line)
      }
      exited.then(() => {
        const line = find()
        if (line !== undefined) resolve(line)
        else reject(new Error(`serve exited before printing ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`))
      }, reject)
    })
    waiters.add(wake)
    wake()
    return within(seen, ms, `serve did not print ${pattern}\nstdout:\n${stdout}\nstderr:\n${stderr}`).finally(() =>
      waiters.delete(wake),
    )
  }

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', ms = 10_000): Promise<Exit> => {
    if (alive()) process.kill(pid, signal)
    try {
      return await within(exited, ms, `serve (pid ${pid}) did not exit after ${signal}`)
    } finally {
      kill()
    }
  }

  try {
    const line = await waitForLine(LISTENING, timeoutMs)
    const port = Number(LISTENING.exec(line)?.[1])
    assert.ok(port > 0 && port < 65536, `no port in ${line}`)
    return {
      pid,
      port,
      origin: `http://127.0.0.1:${port}`,
      metricsOrigin: METRICS_LISTENING.exec(stdout)?.[1],
      stdout: () => stdout,
      stderr: () => stderr,
      exited,
      waitForLine,
      stop,
      kill,
    }
  } catch (error) {
    kill()
    throw error
  }
}

/** Lines of `text` that are JSON objects (pino log lines), parsed. */
export function jsonLines(text: string): Array<Record<string, unknown>> {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/** The value of the unlabelled sample `name` on `server`'s metrics listener (NaN when absent); throws after 5 s. */
export async function serveMetric(server: ServeProcess, name: string): Promise<number> {
  const text = await (await fetch(`${server.metricsOrigin}/metrics`, { signal: AbortSignal.timeout(5_000) })).text()
  return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
}
