// The alert rules operators load (deploy/prometheus-rules.yml): valid for Prometheus (`promtool check
// rules`), each alert unit-tested (`promtool test rules` on deploy/prometheus-rules.test.yml), and
// built only on metrics a real `serve` exposes, so a renamed metric cannot silently disarm an alert.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { parse } from 'yaml'
import { tempDir } from '../../scripts/lib/test-server.js'
import { assertBuilt, cliEnv, killLeftovers, REPO_ROOT, startServe } from '../support/cli-process.js'

const PROMTOOL = '/usr/bin/promtool'
const DEPLOY = join(REPO_ROOT, 'deploy')
const RULES = join(DEPLOY, 'prometheus-rules.yml')
/** Series Prometheus makes itself for every target, which no service exposes. */
const PROMETHEUS_OWN = new Set(['up'])

interface RuleFile {
  groups: Array<{ rules: Array<{ alert: string; expr: string }> }>
}

const rules = (parse(readFileSync(RULES, 'utf8')) as RuleFile).groups.flatMap((group) => group.rules)

const promtool = async (args: string[], cwd = DEPLOY) => {
  try {
    const { stdout, stderr } = await promisify(execFile)(PROMTOOL, args, { cwd, timeout: 60_000 })
    return { code: 0, output: stdout + stderr }
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string }
    return { code: failed.code ?? 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` }
  }
}

describe('deploy/prometheus-rules.yml', () => {
  it('passes `promtool check rules`', async () => {
    const { code, output } = await promtool(['check', 'rules', RULES])
    assert.equal(code, 0, output)
    assert.match(output, new RegExp(`SUCCESS: ${rules.length} rules found`))
  })

  it('passes its unit tests (`promtool test rules deploy/prometheus-rules.test.yml`), and every alert has one', async () => {
    const { code, output } = await promtool(['test', 'rules', 'prometheus-rules.test.yml'])
    assert.equal(code, 0, output)
    assert.match(output, /SUCCESS/)
    const tested = new Set(
      [...readFileSync(join(DEPLOY, 'prometheus-rules.test.yml'), 'utf8').matchAll(/alertname: (\w+)/g)].map((match) => match[1]),
    )
    assert.deepEqual(
      rules.map((rule) => rule.alert).filter((alert) => !tested.has(alert)),
      [],
    )
  })

  it('fails the unit tests when an alert stops firing (the tests can fail)', async () => {
    const dir = tempDir()
    try {
      const broken = readFileSync(RULES, 'utf8').replace('> 0.01', '> 0.5')
      writeFileSync(join(dir.path, 'prometheus-rules.yml'), broken)
      copyFileSync(join(DEPLOY, 'prometheus-rules.test.yml'), join(dir.path, 'prometheus-rules.test.yml'))
      const { code, output } = await promtool(['test', 'rules', 'prometheus-rules.test.yml'], dir.path)
      assert.notEqual(code, 0)
      assert.match(output, /AnimalStoreHighErrorRate/)
    } finally {
      dir.remove()
    }
  })

  describe('names only metrics that `serve` exposes (WORKERS=2, which adds the primary’s own)', () => {
    const dir = tempDir()
    let exposed: Set<string>
    before(async () => {
      assertBuilt()
      const server = await startServe(cliEnv({ DATABASE_URL: `sqlite:${dir.path}/r.db`, WORKERS: '2', LOG_LEVEL: 'warn' }))
      try {
        await fetch(`${server.origin}/healthz`)
        const text = await (await fetch(`${server.metricsOrigin}/metrics`)).text()
        exposed = new Set(
          [...text.matchAll(/^# TYPE (\w+) (\w+)$/gm)].flatMap(([, name, type]) =>
            type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name as string],
          ),
        )
      } finally {
        await server.stop('SIGTERM')
      }
    })
    after(() => {
      killLeftovers()
      dir.remove()
    })

    it('every metric an alert reads is in the real /metrics', () => {
      const referenced = new Set(
        rules.flatMap((rule) => [...rule.expr.matchAll(/\b([a-zA-Z_:][\w:]*)\{/g)].map((match) => match[1] as string)),
      )
      assert.ok(referenced.size >= 10, [...referenced].join(', '))
      assert.deepEqual(
        [...referenced].filter((name) => !exposed.has(name) && !PROMETHEUS_OWN.has(name)),
        [],
      )
    })
  })
})
