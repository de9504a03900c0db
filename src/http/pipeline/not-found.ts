// Requests no route answers: 405 with `Allow` when the path exists under another method (RFC 9110
// §15.5.6), else 404, an empty path parameter (`/v1/pets/`) included. Routes are collected as they
// are registered, so the table cannot drift.
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify'
import { ApiError } from '../errors.js'

interface KnownPath {
  pattern: RegExp
  methods: Set<string>
}

/**
 * Installs the route collector (call before registering routes) and the not-found handler. Returns
 * the error for a request no route answers (ApiError `method_not_allowed` with `Allow`, or
 * `not_found`), so that the authentication hook can answer with it at once, before any body is read.
 */
export function installNotFoundHandler(app: FastifyInstance): (request: FastifyRequest) => ApiError {
  const known = new Map<string, KnownPath>()
  app.addHook('onRoute', (route: RouteOptions) => {
    // The router matches `/v1/pets/` to `/v1/pets/:petId` with an empty id: that names no resource.
    if (route.url.includes('/:')) route.preValidation = [emptyParameterIsNotFound, ...[route.preValidation ?? []].flat()]
    const entry = known.get(route.url) ?? { pattern: toPattern(route.url), methods: new Set<string>() }
    for (const method of [route.method].flat()) entry.methods.add(method)
    known.set(route.url, entry)
  })
  const notFound = (request: FastifyRequest): ApiError => {
    const path = routedPath(request.url)
    for (const { pattern, methods } of known.values()) {
      if (pattern.test(path)) return new ApiError('method_not_allowed', { headers: { allow: [...methods].sort().join(', ') } })
    }
    return new ApiError('not_found')
  }
  app.setNotFoundHandler(async (request) => {
    throw notFound(request)
  })
  return notFound
}

// 404 for a request whose path leaves a parameter empty (after authentication, like any unknown path).
async function emptyParameterIsNotFound(request: FastifyRequest): Promise<void> {
  if (Object.values(request.params as Record<string, string>).includes('')) throw new ApiError('not_found')
}

// The path as the router saw it: without an absolute-form origin or query, percent-decoded.
function routedPath(url: string): string {
  const path = url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '').split('?', 1)[0] ?? ''
  try {
    return decodeURIComponent(path)
  } catch {
    return path
  }
}

// `/v1/pets/:petId` → /^\/v1\/pets\/[^/]+$/ (an empty segment names no resource: 404, not 405)
function toPattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/')
  return new RegExp(`^${source}$`)
}
