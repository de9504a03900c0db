// The supervisors we ship settings for, read as text (systemd, Docker and Kubernetes do not run
// here): each signals as stop-signals.test.ts does and waits longer than the service's drain and
// close before SIGKILL, and every shipped drain is long enough for a rolling restart behind
// deploy/nginx.conf; docs/deploying.md's "Supervisors" table states the same values. systemd's own
// checker (systemd-analyze verify) reads the unit.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { promisify } from 'node:util'
import { parse } from 'yaml'
import { SHUTDOWN_GRACE_MS } from '../../src/commands/serve.js'
import { REPO_ROOT } from '../support/cli-process.js'
import { nginxRetryMs } from '../support/nginx-retry.js'

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8')

/** A duration as systemd (`20s`, `1min 30s`, `20`: seconds) or Docker (`20s`, `1m30s`) writes it, in ms. */
function durationMs(text: string): number {
  const parts = [...text.matchAll(/(\d+)\s*(ms|min|m|s)?/g)]
  assert.ok(
    parts.length > 0 &&
      parts
        .map((part) => part[0])
        .join('')
        .replaceAll(' ', '') === text.replaceAll(' ', ''),
    text,
  )
  const unitMs = { ms: 1, s: 1000, m: 60_000, min: 60_000 } as const
  return parts.reduce((sum, [, value, unit]) => sum + Number(value) * unitMs[(unit ?? 's') as keyof typeof unitMs], 0)
}

/** `SHUTDOWN_DRAIN_MS=N` in a line of `KEY=VALUE` settings (Dockerfile ENV, systemd Environment=). */
function drainIn(settings: string, where: string): number {
  const drain = /\bSHUTDOWN_DRAIN_MS=(\d+)\b/.exec(settings)?.[1]
  assert.ok(drain, `${where} sets SHUTDOWN_DRAIN_MS`)
  return Number(drain)
}

const imageDrainMs = drainIn(
  read('Dockerfile')
    .split('\n')
    .filter((line) => line.startsWith('ENV '))
    .join('\n'),
  'the Dockerfile',
)

/** The stop settings each supervisor ships, for the docs' table below. */
const unit = new Map(
  read('deploy/animal-store.service')
    .split('\n')
    .filter((line) => /^[A-Za-z]+=/.test(line))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const),
)
const compose = parse(read('compose.yaml')) as { services: Record<string, Record<string, unknown>> }
const [deployment] = (
  read('deploy/kubernetes.yaml')
    .split(/^---$/m)
    .map((doc) => parse(doc)) as KubernetesObject[]
).filter((object) => object.kind === 'Deployment')

interface KubernetesObject {
  kind: string
  spec: {
    template: {
      spec: {
        terminationGracePeriodSeconds?: number
        containers: Array<{
          env?: Array<{ name: string }>
          lifecycle?: { preStop?: { exec?: { command: string[] } } }
          readinessProbe?: { httpGet?: { path: string } }
          livenessProbe?: { httpGet?: { path: string } }
        }>
      }
    }
  }
}

describe('every drain we ship', () => {
  it(`is long enough for a rolling restart behind deploy/nginx.conf (above ${nginxRetryMs()} ms)`, () => {
    assert.ok(imageDrainMs > nginxRetryMs(), `the image's ${imageDrainMs} ms`)
    const unitDrainMs = drainIn(unit.get('Environment') ?? '', 'the unit')
    assert.ok(unitDrainMs > nginxRetryMs(), `the unit's ${unitDrainMs} ms`)
  })
})

describe('deploy/animal-store.service (systemd)', () => {
  it('sends SIGTERM to every process of the service at once (KillMode=control-group), as stop-signals.test.ts signals the process group', () => {
    assert.equal(unit.get('KillMode'), 'control-group')
    assert.equal(unit.get('KillSignal') ?? 'SIGTERM', 'SIGTERM')
    assert.equal(unit.get('ExecStop'), undefined, 'no ExecStop: the stop is the signal')
  })

  it(`sends SIGKILL only after its SHUTDOWN_DRAIN_MS + ${SHUTDOWN_GRACE_MS} ms`, () => {
    const drainMs = drainIn(unit.get('Environment') ?? '', 'the unit')
    const timeoutMs = durationMs(unit.get('TimeoutStopSec') ?? '')
    assert.ok(timeoutMs > drainMs + SHUTDOWN_GRACE_MS, `TimeoutStopSec ${timeoutMs} ms`)
  })

  it('runs `serve` as `npm start` does', () => {
    const pkg = JSON.parse(read('package.json')) as { scripts: { start: string } }
    assert.equal(unit.get('ExecStart'), pkg.scripts.start.replace(/^node /, '/usr/bin/node '))
  })

  it('passes systemd-analyze verify', async () => {
    const { stdout, stderr } = await promisify(execFile)('systemd-analyze', [
      'verify',
      join(REPO_ROOT, 'deploy/animal-store.service'),
    ]).catch((error: unknown) => {
      const failed = error as { code?: string; stderr?: string }
      assert.notEqual(failed.code, 'ENOENT', 'systemd-analyze is missing: install it: scripts/install-test-tools.sh')
      assert.fail(`systemd-analyze verify failed:\n${failed.stderr}`)
    })
    assert.equal(`${stdout}${stderr}`, '')
  })
})

describe('compose.yaml', () => {
  for (const [name, service] of Object.entries(compose.services).filter(([, service]) => service.build !== undefined)) {
    it(`${name}: Docker's SIGKILL comes after the image's SHUTDOWN_DRAIN_MS + ${SHUTDOWN_GRACE_MS} ms (stop_grace_period)`, () => {
      const graceMs = durationMs(String(service.stop_grace_period ?? '10s'))
      assert.ok(graceMs > imageDrainMs + SHUTDOWN_GRACE_MS, `stop_grace_period ${graceMs} ms`)
      assert.equal((service.environment as Record<string, string>).SHUTDOWN_DRAIN_MS, undefined, "the image's drain")
    })
  }
})

const pod = deployment?.spec.template.spec
const container = pod?.containers[0]
/** The seconds the pod's preStop sleeps (NaN if it does something else). */
const preStopSeconds = Number(/^sleep (\d+)$/.exec(container?.lifecycle?.preStop?.exec?.command.join(' ') ?? '')?.[1])

describe('deploy/kubernetes.yaml', () => {
  const preStopMs = preStopSeconds * 1000

  it('waits in preStop, then gets SIGTERM, and SIGKILL only after preStop + SHUTDOWN_DRAIN_MS + the close (terminationGracePeriodSeconds)', () => {
    assert.ok(pod && container, 'a Deployment with a container')
    assert.ok(preStopMs > 0, 'preStop sleeps, while the pod leaves the endpoints')
    assert.ok(!container.env?.some((variable) => variable.name === 'SHUTDOWN_DRAIN_MS'), "the image's drain")
    const graceMs = (pod.terminationGracePeriodSeconds ?? 30) * 1000
    assert.ok(graceMs > preStopMs + imageDrainMs + SHUTDOWN_GRACE_MS, `terminationGracePeriodSeconds ${graceMs / 1000}`)
  })

  it('routes by /readyz and restarts by /healthz only', () => {
    assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz')
    assert.equal(container?.livenessProbe?.httpGet?.path, '/healthz')
  })
})

describe('docs/deploying.md, "Supervisors"', () => {
  const table = /### Supervisors\n[\s\S]*?\n\n(\|[\s\S]*?)\n\n/.exec(read('docs/deploying.md'))?.[1] ?? ''
  const row = (supervisor: string) => table.split('\n').find((line) => line.startsWith(`| ${supervisor} |`)) ?? ''

  it('states the values the files have', () => {
    assert.ok(row('systemd').includes(`\`KillMode=${unit.get('KillMode')}\``))
    assert.ok(row('systemd').includes(`\`TimeoutStopSec=${unit.get('TimeoutStopSec')}\``))
    const graces = new Set(
      Object.values(compose.services)
        .map((service) => service.stop_grace_period)
        .filter(Boolean),
    )
    assert.equal(graces.size, 1)
    assert.ok(row('Docker Compose').includes(`\`stop_grace_period: ${[...graces][0]}\``))
    assert.ok(row('Kubernetes').includes(`\`preStop\` waits ${preStopSeconds} s`))
    assert.ok(row('Kubernetes').includes(`\`terminationGracePeriodSeconds: ${pod?.terminationGracePeriodSeconds}\``))
  })
})
