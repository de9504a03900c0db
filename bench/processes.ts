// Child processes of the bench: servers started and stopped by PID, bounded commands, and /proc memory and CPU time.
import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/** How long (ms) a server may take to print its listening line and answer /healthz. */
const START_TIMEOUT_MS = 30_000
/** How long (ms) a server may take to exit after SIGTERM before SIGKILL (the service's own grace is 10 s). */
const STOP_TIMEOUT_MS = 12_000

/** A running child server. */
export interface ServerProcess {
  readonly pid: number
  /** `http://127.0.0.1:PORT`. */
  readonly origin: string
  /** The file its stdout (its log) goes to. */
  readonly stdoutFile: string
  /** SIGTERM by PID, then SIGKILL if it has not exited within STOP_TIMEOUT_MS. */
  stop(): Promise<void>
}

/** Every child not yet exited (servers and bounded commands), so an interrupted bench can stop them by PID. */
const children = new Set<ChildProcess>()

/**
 * Spawns `argv` with `env`, stdout to `stdoutFile` (nothing in the bench drains it under load), waits for a line
 * `listening on http://127.0.0.1:PORT` and for GET /healthz to answer 200. On failure kills it and throws with its stderr.
 * A `taskset -c N` prefix in `argv` execs the server in the same process, so the PID is the server's.
 */
export async function startServer(
  name: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
  stdoutFile: string,
): Promise<ServerProcess> {
  const stdout = openSync(stdoutFile, 'w')
  const [command = '', ...args] = argv
  const child = spawn(command, args, { env, stdio: ['ignore', stdout, 'pipe'] })
  closeSync(stdout)
  children.add(child)
  child.once('exit', () => children.delete(child))
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4000)
  })
  const stop = () => stopChild(child)
  try {
    const deadline = Date.now() + START_TIMEOUT_MS
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined)
        throw new Error(`exited (${child.exitCode ?? child.signalCode ?? 'not started'})`)
      if (Date.now() > deadline) throw new Error(`not answering /healthz within ${START_TIMEOUT_MS} ms`)
      const port = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(readFileSync(stdoutFile, 'utf8'))?.[1]
      const response = port ? await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined) : undefined
      await response?.arrayBuffer()
      if (response?.status === 200) return { pid: child.pid, origin: `http://127.0.0.1:${port}`, stdoutFile, stop }
      await sleep(25)
    }
  } catch (error) {
    await stop()
    throw new Error(`${name} did not start: ${(error as Error).message}${stderr ? `\n--- its stderr ---\n${stderr}` : ''}`)
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
  await exited
  clearTimeout(timer)
}

/** SIGKILLs, by PID, every child still running (an interrupted bench). */
export function killChildren(): void {
  for (const child of children) child.kill('SIGKILL')
}

/** What a bounded command left: its exit code or signal and its output. */
export interface BoundedResult {
  code: number | null
  signal: NodeJS.Signals | null
  stdout: string
  stderr: string
}

/** Runs `argv` (no shell) to its end, collecting its output; SIGKILLs it after `timeoutMs`. Rejects only if it cannot start. */
export async function runBounded(argv: string[], timeoutMs: number, env?: NodeJS.ProcessEnv): Promise<BoundedResult> {
  const [command = '', ...args] = argv
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(env && { env }) })
  children.add(child)
  let stdout = ''
  let stderr = ''
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk
  })
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  try {
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject)
      child.once('close', (exitCode, exitSignal) => resolve([exitCode, exitSignal]))
    })
    return { code, signal, stdout, stderr }
  } finally {
    clearTimeout(timer)
    children.delete(child)
  }
}

/** The CPU time (user + system, every thread) process `pid` has used, in seconds (/proc/PID/stat, 10 ms ticks); NaN once gone. */
export function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return (Number(fields[11]) + Number(fields[12])) / 100
  } catch {
    return Number.NaN
  }
}

/** Every live process on the machine with its parent and its CPU fields (/proc/PID/stat, in clock ticks). */
function processTable(): Map<number, { ppid: number; ticks: number; childTicks: number }> {
  const table = new Map<number, { ppid: number; ticks: number; childTicks: number }>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // it ended while the folder was read
    }
    // After the command name in parentheses: state, ppid, …; utime, stime, cutime, cstime are fields 14–17 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    table.set(Number(entry), {
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      childTicks: Number(fields[13]) + Number(fields[14]),
    })
  }
  return table
}

/** `root` and every live process of `table` descended from it, root first. */
function descendants(table: ReturnType<typeof processTable>, root: number): number[] {
  const tree = [root]
  for (let i = 0; i < tree.length; i++) for (const [pid, each] of table) if (each.ppid === tree[i]) tree.push(pid)
  return tree
}

/** `root` and every live process descended from it, root first. */
export function processTree(root: number): number[] {
  return descendants(processTable(), root)
}

/**
 * The CPU time (user + system, seconds) a server that forks its workers has used: each live process of its tree
 * (utime + stime) and what their children that exited and were reaped had used (cutime + cstime: the kernel adds a
 * child's times to its parent's when the parent reaps it). For PostgreSQL's postmaster: itself, its auxiliary
 * processes and its backends, live or ended. NaN once root is gone.
 */
export function treeCpuSeconds(root: number): number {
  const table = processTable()
  if (!table.has(root)) return Number.NaN
  const ticks = descendants(table, root).reduce(
    (sum, pid) => sum + (table.get(pid)?.ticks ?? 0) + (table.get(pid)?.childTicks ?? 0),
    0,
  )
  return ticks / 100
}

/** A process's memory from /proc/PID/status in KiB: now (VmRSS) and its peak (VmHWM); undefined once it is gone. */
export function readMemory(pid: number): { rssKiB: number; hwmKiB: number } | undefined {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return undefined
  }
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
  return { rssKiB: field('VmRSS'), hwmKiB: field('VmHWM') }
}
