// RFC 6750 bearer authentication (docs/specification.md, Authentication) for every route not
// marked public, and the key's scope for the route's operation, checked in the one onRequest step
// (request-pipeline.ts), before routing outcomes (404/405), parsing and validation. A key seen since
// the last reload is answered synchronously (key-cache.ts).
import { grants, type KeyScope } from '../../key-grants.js'
import { ApiError } from '../errors.js'
import type { KeyIdentity, KeyVerifier } from './key-cache.js'

/** What authenticate() returns (key-cache.ts), named here for the routes that read it. */
export type { KeyIdentity } from './key-cache.js'

/** RFC 6750 §3 challenge realm. */
const REALM = 'Bearer realm="animal-store"'
// RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; the scheme is case-insensitive (RFC 9110 §11.1).
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i
// A refused client keeps its connection when it left no body unread (request-pipeline.ts closes it
// otherwise): closing made every guess pay for a new connection, the server's cost more than the
// client's, and guessing is bounded per address by AUTH_FAILURES_PER_MINUTE (rate-limit.ts).
const MISSING_CHALLENGE = Object.freeze({ 'www-authenticate': REALM })
const INVALID_CHALLENGE = Object.freeze({
  'www-authenticate': `${REALM}, error="invalid_token", error_description="The API key is not valid"`,
})

// A refusal is the same answer every time, so each is built once and frozen (a write to one would
// throw, not leak into the next request's answer): constructing the Error was about 3 % of a 401's
// CPU (docs/benchmarks.md, History).
const MISSING_API_KEY = Object.freeze(new ApiError('missing_api_key', { headers: MISSING_CHALLENGE }))
const INVALID_API_KEY = Object.freeze(new ApiError('invalid_api_key', { headers: INVALID_CHALLENGE }))

/** The RFC 6750 §3.1 challenge of a 403 `insufficient_scope`, naming the scope the operation needs. */
export function insufficientScopeChallenge(required: KeyScope): string {
  return `${REALM}, error="insufficient_scope", scope="${required}"`
}

/** The two WWW-Authenticate values a 401 carries (openapi.json lists them). */
export const CHALLENGES = [MISSING_CHALLENGE['www-authenticate'], INVALID_CHALLENGE['www-authenticate']]

/**
 * The identity of the request's bearer key (RFC 6750 §2.1), synchronously when the verifier knows
 * the key, else as a promise. A refusal is returned (or resolved), not thrown: ApiError
 * `missing_api_key` when there are no bearer credentials and `invalid_api_key` (RFC 6750
 * `error="invalid_token"`) for a key that is not valid, each with a `WWW-Authenticate` challenge (a
 * throw made V8 record where it was thrown, about a tenth of a 401's CPU: docs/benchmarks.md,
 * History). Rejects only when the verifier cannot read the keys (ApiError 503).
 */
export function authenticate(
  header: string | undefined,
  verifier: KeyVerifier,
): KeyIdentity | ApiError | Promise<KeyIdentity | ApiError> {
  if (header === undefined || !/^bearer\s+\S/i.test(header)) {
    return MISSING_API_KEY
  }
  const key = BEARER.exec(header)?.[1]
  const identity = key === undefined ? undefined : verifier.verify(key)
  if (identity instanceof Promise) return identity.then(admitted)
  return admitted(identity)
}

function admitted(identity: KeyIdentity | undefined): KeyIdentity | ApiError {
  return identity ?? INVALID_API_KEY
}

/**
 * ApiError `insufficient_scope` (403) when the key's scope does not include `required` (RFC 6750
 * §3.1: `error="insufficient_scope"` and the `scope` the operation needs, in the challenge), else
 * undefined. `required` undefined: any valid key will do.
 */
export function authorize(identity: KeyIdentity, required: KeyScope | undefined): ApiError | undefined {
  if (required === undefined || grants(identity.scope, required)) return undefined
  return new ApiError('insufficient_scope', {
    headers: { 'www-authenticate': insufficientScopeChallenge(required) },
  })
}
