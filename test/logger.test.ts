// The service's log stream on stdout (src/logger.ts): lines below `error` are batched, lines at
// `error` and above are written at once with everything before them, so a SIGKILL right after an
// error (an OOM kill, a crash investigation) cannot lose it.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { LOG_FLUSH_MS } from '../src/logger.js'
import { assertBuilt, REPO_ROOT, within } from './support/cli-process.js'

/** Runs a process that logs `lines` (level and message) through the real logger, then SIGKILLs itself; resolves to its stdout lines. */
async function logThenSigkill(lines: Array<[level: 'info' | 'warn' | 'error' | 'fatal', message: string]>): Promise<string[]> {
  const logger = pathToFileURL(join(REPO_ROOT, 'dist', 'logger.js')).href
  const script = `
    const { createLogger } = await import(${JSON.stringify(logger)})
    const log = createLogger('info')
    for (const [level, message] of ${JSON.stringify(lines)}) log[level](message)
    process.kill(process.pid, 'SIGKILL')
  `
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
  let stdout = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk
  })
  const signal = await within(
    new Promise<NodeJS.Signals | null>((resolve) => child.once('close', (_code, signal) => resolve(signal))),
    10_000,
    'the logging process did not end',
  )
  assert.equal(signal, 'SIGKILL')
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { msg: string }).msg)
}

describe('the log stream on stdout (createLogger)', () => {
  before(assertBuilt)

  it('writes an error line, and every line before it, before a SIGKILL can lose them', async () => {
    assert.deepEqual(
      await logThenSigkill([
        ['info', 'request 1'],
        ['warn', 'slow'],
        ['error', 'request failed'],
      ]),
      ['request 1', 'slow', 'request failed'],
    )
    assert.deepEqual(await logThenSigkill([['fatal', 'giving up']]), ['giving up'])
  })

  it('still batches lines below error (a SIGKILL loses the unflushed batch)', async () => {
    assert.deepEqual(await logThenSigkill([['info', 'request 1']]), [])
  })

  it('writes a batch below error within LOG_FLUSH_MS while the process keeps running', async () => {
    const logger = pathToFileURL(join(REPO_ROOT, 'dist', 'logger.js')).href
    const script = `
      const { createLogger } = await import(${JSON.stringify(logger)})
      createLogger('info').info('quiet moment')
      setInterval(() => {}, 1000)
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    try {
      const line = await within(
        new Promise<string>((resolve) => child.stdout.setEncoding('utf8').once('data', (chunk: string) => resolve(chunk))),
        LOG_FLUSH_MS + 5_000,
        'the batched line was never written',
      )
      assert.equal((JSON.parse(line) as { msg: string }).msg, 'quiet moment')
    } finally {
      child.kill('SIGKILL')
    }
  })

  it('writes the last batch when the process exits normally', async () => {
    const logger = pathToFileURL(join(REPO_ROOT, 'dist', 'logger.js')).href
    const script = `
      const { createLogger } = await import(${JSON.stringify(logger)})
      const log = createLogger('info')
      for (let i = 0; i < 3; i++) log.info('line ' + i)
      process.exit(0)
    `
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    let stdout = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    const code = await within(
      new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode))),
      10_000,
      'the logging process did not exit',
    )
    assert.equal(code, 0)
    assert.deepEqual(
      stdout
        .split('\n')
        .filter(Boolean)
        .map((each) => (JSON.parse(each) as { msg: string }).msg),
      ['line 0', 'line 1', 'line 2'],
    )
  })
})
