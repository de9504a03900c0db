// How long deploy/nginx.conf keeps away from an instance that refused connections, read from the
// file: the figure a drain must exceed for a rolling restart through it (docs/deploying.md).
import assert from 'node:assert/strict'
import { CONF } from './nginx.js'

/**
 * The longest time (ms) nginx skips an upstream after its last failed attempt: `fail_timeout`, which
 * nginx compares in whole seconds (`now - checked <= fail_timeout`), so up to one second more.
 * Fails unless every upstream server has the same `fail_timeout`.
 */
export function nginxRetryMs(): number {
  const timeouts = [...CONF.matchAll(/^\s*server api-\d:8080[^;]*\bfail_timeout=(\d+)s\b/gm)].map((match) => Number(match[1]))
  assert.equal(timeouts.length, 2, 'deploy/nginx.conf gives each instance a fail_timeout in seconds')
  assert.equal(new Set(timeouts).size, 1, 'one fail_timeout for every instance')
  return ((timeouts[0] as number) + 1) * 1000
}
