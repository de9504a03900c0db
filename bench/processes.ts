// Child server processes for the bench: start one, wait until it answers, read its memory, stop it by PID.
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'

/** How long (ms) a server may take to print its listening line, and then to answer /healthz. */
const START_TIMEOUT_MS = 30_000
const HEALTH_TIMEOUT_MS = 10_000
/** How long (ms) a server may take to exit after SIGTERM before it gets SIGKILL (the service's grace is 10 s). */
const STOP_TIMEOUT_MS = 12_000
const POLL_MS = 25

/** A running child server. */
export interface ServerProcess {
  readonly name: string
  readonly pid: number
  /** `http://127.0.0.1:PORT` (no `/v1`). */
  readonly origin: string
  /** The file the child's stdout goes to (its logs, when it logs). */
  readonly stdoutFile: string
  /** Sends SIGTERM to the PID, waits (bounded) for the exit, then SIGKILL if it is still running. */
  stop(): Promise<void>
}

/** A process's resident memory from /proc/PID/status, in KiB: now (VmRSS) and its high-water mark (VmHWM). */
export interface Memory {
  rssKiB: number
  hwmKiB: number
}

/**
 * Spawns `[...prefix] node ...args` in `cwd` with `env` (node: this process's own binary), its stdout written to `stdoutFile` (a file, so nothing in the
 * bench process has to drain it under load), and waits for a line `... listening on http://127.0.0.1:PORT...`,
 * then for GET /healthz to answer 200, both bounded. Rejects (after killing the child) if either never happens
 * or the child exits first; the rejection carries the child's stderr.
 */
export async function startServer(
  name: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; stdoutFile: string; prefix?: string[] },
): Promise<ServerProcess> {
  const stdoutFd = openSync(options.stdoutFile, 'w')
  // A prefix such as `taskset -c 0` execs node in the same process, so the PID is still the server's.
  const [command, ...rest] = [...(options.prefix ?? []), process.execPath, ...args]
  const child = spawn(command as string, rest, { cwd: options.cwd, env: options.env, stdio: ['ignore', stdoutFd, 'pipe'] })
  closeSync(stdoutFd)
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000)
  })
  let exit: string | undefined
  child.once('exit', (code, signal) => {
    exit = `exited (code ${code}, signal ${signal})`
  })
  const stop = () => stopChild(child)
  const failure = (what: string) => new Error(`${name}: ${what}${stderr ? `\n--- its stderr ---\n${stderr.trimEnd()}` : ''}`)
  try {
    if (child.pid === undefined) throw failure('could not be spawned')
    const port = await poll(START_TIMEOUT_MS, () => {
      if (exit) throw failure(`${exit} before listening`)
      return /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(options.stdoutFile, 'utf8'))?.[1]
    })
    if (port === undefined) throw failure(`printed no listening line within ${START_TIMEOUT_MS} ms`)
    const origin = `http://127.0.0.1:${port}`
    const healthy = await poll(HEALTH_TIMEOUT_MS, async () => {
      if (exit) throw failure(`${exit} before answering /healthz`)
      const response = await fetch(`${origin}/healthz`).catch(() => undefined)
      await response?.arrayBuffer()
      return response?.status === 200 ? true : undefined
    })
    if (!healthy) throw failure(`did not answer GET /healthz with 200 within ${HEALTH_TIMEOUT_MS} ms`)
    return { name, pid: child.pid, origin, stdoutFile: options.stdoutFile, stop }
  } catch (error) {
    await stop()
    throw error
  }
}

/** Memory of process `pid` (Linux /proc), or undefined once it is gone. */
export function readMemory(pid: number): Memory | undefined {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return undefined
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') }
}

/** The CPUs process `pid` may run on (`Cpus_allowed_list` of /proc/PID/status, e.g. `0` or `0-1`), or '?'. */
export function allowedCpus(pid: number): string {
  try {
    return /^Cpus_allowed_list:\s+(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? '?'
  } catch {
    return '?'
  }
}

/** Calls `probe` every POLL_MS until it returns a value other than undefined, or `timeoutMs` passes (undefined). */
async function poll<T>(timeoutMs: number, probe: () => T | undefined | Promise<T | undefined>): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value !== undefined || Date.now() >= deadline) return value
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const signal = (name: NodeJS.Signals) => {
    try {
      if (child.pid !== undefined) process.kill(child.pid, name)
    } catch {}
  }
  signal('SIGTERM')
  let timer: NodeJS.Timeout | undefined
  const timedOut = await Promise.race([
    exited.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), STOP_TIMEOUT_MS)
    }),
  ])
  clearTimeout(timer)
  if (timedOut) {
    signal('SIGKILL')
    await exited
  }
}

/** What a bounded child command left: its exit code or signal, and its output. */
export interface BoundedResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Children started by runBounded that have not exited yet, so that an interrupted bench can stop them. */
const running = new Set<ChildProcess>()

/**
 * Runs `argv` (no shell) to completion and collects its output; SIGKILLs it by PID if it is still running after
 * `timeoutMs`. Rejects only when it cannot be spawned.
 */
export async function runBounded(argv: string[], timeoutMs: number, env?: NodeJS.ProcessEnv): Promise<BoundedResult> {
  const [command, ...args] = argv
  if (command === undefined) throw new Error('runBounded: empty command')
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(env && { env }) })
  running.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const timer = setTimeout(() => {
    if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
  }, timeoutMs)
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]))
    })
    return { code, signal, stdout, stderr }
  } finally {
    clearTimeout(timer)
    running.delete(child)
  }
}

/** SIGKILLs, by PID, every runBounded child still running (load generators of an interrupted run). */
export function killRunning(): void {
  for (const child of running) {
    try {
      if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
    } catch {}
  }
}
