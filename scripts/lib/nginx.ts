// Debian's nginx (/usr/sbin/nginx) for tests: the shipped deploy/nginx.conf in front of local
// instances (the recommended balancer), or a plain reverse proxy with nginx's own error pages (the
// balancer the TypeScript client meets).
import assert from 'node:assert/strict'
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { freePort } from './postgres-server.js'
import { tempDir } from './test-server.js'
import { connectionRefused, within } from './wait.js'

const NGINX = '/usr/sbin/nginx'
/** deploy/nginx.conf as shipped. */
export const CONF = readFileSync(new URL('../../deploy/nginx.conf', import.meta.url), 'utf8')

/** Starts nginx with deploy/nginx.conf in front of the instances on 127.0.0.1 at `upstreams`, on a free port. */
export async function startShippedNginx(upstreams: [number, number]): Promise<Nginx> {
  const port = await freePort()
  return startNginx(localConf(port, upstreams), port)
}

/**
 * deploy/nginx.conf with only its `listen` and the two upstream `server` addresses replaced by local
 * ones; fails if any of them is not found exactly once, so the test always runs the real file.
 */
function localConf(listenPort: number, upstreams: [number, number]): string {
  let conf = CONF
  const replaceOnce = (pattern: RegExp, replacement: string) => {
    assert.equal(conf.match(new RegExp(pattern, 'g'))?.length, 1, `deploy/nginx.conf has ${pattern} once`)
    conf = conf.replace(pattern, replacement)
  }
  replaceOnce(/listen 8080;/, `listen 127.0.0.1:${listenPort};`)
  replaceOnce(/server api-1:8080\b/, `server 127.0.0.1:${upstreams[0]}`)
  replaceOnce(/server api-2:8080\b/, `server 127.0.0.1:${upstreams[1]}`)
  return conf
}

/**
 * Starts nginx as a plain reverse proxy to the one upstream on 127.0.0.1 at `upstreamPort`, with
 * nginx's own error pages (HTML 502 when the upstream refuses, 504 when it has not answered within
 * `readTimeoutS` seconds): a balancer that is not ours, as clients meet them.
 */
export async function startPlainNginx(upstreamPort: number, readTimeoutS: number): Promise<Nginx> {
  const port = await freePort()
  const conf = `server {
  listen 127.0.0.1:${port};
  location / {
    proxy_pass http://127.0.0.1:${upstreamPort};
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_read_timeout ${readTimeoutS}s;
  }
}
`
  return startNginx(conf, port)
}

/** A running nginx master (in the foreground) and how to stop it. */
export interface Nginx {
  origin: string
  /** nginx's error log so far. */
  errorLog(): string
  /** SIGTERM by PID, waits for the exit (SIGKILL by PID after 5 s). */
  stop(): Promise<void>
}

/**
 * Runs Debian's nginx with `serverBlock` (the generated conf) inside a minimal main conf whose pid
 * file, logs and temporary folders are all in a fresh temporary prefix. As root, the master stays
 * root and the workers run as `nobody`, as in a packaged install. Resolves once it accepts connections.
 */
async function startNginx(serverBlock: string, port: number): Promise<Nginx> {
  assert.ok(existsSync(NGINX), `${NGINX} is missing: install it: scripts/install-test-tools.sh`)
  const prefix = tempDir()
  // Workers running as nobody must reach the temporary folders nginx creates (and chowns) in here.
  chmodSync(prefix.path, 0o755)
  const path = (name: string) => join(prefix.path, name)
  const user =
    process.getuid?.() === 0 ? `user nobody ${execFileSync('id', ['-gn', 'nobody'], { encoding: 'utf8' }).trim()};` : ''
  writeFileSync(path('default.conf'), serverBlock)
  writeFileSync(
    path('nginx.conf'),
    `${user}
daemon off;
worker_processes 1;
pid ${path('nginx.pid')};
error_log ${path('error.log')} warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${path('body')};
  proxy_temp_path ${path('proxy')};
  fastcgi_temp_path ${path('fastcgi')};
  uwsgi_temp_path ${path('uwsgi')};
  scgi_temp_path ${path('scgi')};
  include ${path('default.conf')};
}
`,
  )
  const child: ChildProcess = spawn(NGINX, ['-p', prefix.path, '-c', path('nginx.conf'), '-e', path('error.log')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  child.stderr?.setEncoding('utf8').on('data', (text: string) => {
    stderr += text
  })
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const pid = child.pid
  assert.ok(pid, 'nginx did not start')
  const errorLog = () => {
    try {
      return readFileSync(path('error.log'), 'utf8')
    } catch {
      return ''
    }
  }
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGTERM')
    try {
      await within(exited, 5_000, `nginx (pid ${pid}) did not exit`)
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(pid, 'SIGKILL')
      prefix.remove()
    }
  }
  // Ready once it accepts a connection; it fails fast (and exits) on a bad configuration.
  const deadline = Date.now() + 10_000
  while (await connectionRefused(port)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = `${stderr}${errorLog()}`
      await stop()
      throw new Error(`nginx did not start:\n${log}`)
    }
    await delay(20)
  }
  return { origin: `http://127.0.0.1:${port}`, errorLog, stop }
}
