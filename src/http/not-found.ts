// Requests no route answers: 405 with `Allow` when the path exists under another method (RFC 9110
// §15.5.6), else 404. Routes are collected as they are registered, so the table cannot drift.
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { ApiError } from './errors.js'

interface KnownPath {
  pattern: RegExp
  methods: Set<string>
}

/**
 * Installs the route collector (call before registering routes) and the not-found handler, which
 * throws ApiError `method_not_allowed` (with `Allow`) or `not_found`.
 */
export function installNotFoundHandler(app: FastifyInstance): void {
  const known = new Map<string, KnownPath>()
  app.addHook('onRoute', (route: RouteOptions) => {
    const entry = known.get(route.url) ?? { pattern: toPattern(route.url), methods: new Set<string>() }
    for (const method of [route.method].flat()) entry.methods.add(method)
    known.set(route.url, entry)
  })
  app.setNotFoundHandler(async (request: FastifyRequest) => {
    const path = request.url.split('?', 1)[0] ?? ''
    for (const { pattern, methods } of known.values()) {
      if (pattern.test(path)) {
        throw new ApiError('method_not_allowed', { headers: { allow: [...methods].sort().join(', ') } })
      }
    }
    throw new ApiError('not_found')
  })
}

// `/v1/pets/:petId` → /^\/v1\/pets\/[^/]+$/
function toPattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/')
  return new RegExp(`^${source}$`)
}
