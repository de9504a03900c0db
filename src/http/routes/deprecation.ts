// Deprecation signalling for getPet (docs/specification.md, Deprecation): RFC 9745 Deprecation,
// RFC 8594 Sunset and an RFC 8288 successor-version link, on every response of the operation,
// errors included.
import { header, LINK_BASE_MAX_LENGTH } from './responses.js'

/** 2026-11-20T00:00:00Z, when interface 1.0.0 marked getPet deprecated, as RFC 9745 `@`-seconds. */
const DEPRECATED_AT = '@1795132800'
/**
 * Removal announced for 5 December 2030 (docs/specification.md, Deprecation). RFC 8594 uses an
 * HTTP-date (RFC 9110 §5.6.7).
 */
export const SUNSET_DATE = 'Thu, 05 Dec 2030 00:00:00 GMT'

/** The three headers for every response of a deprecated route; `successor` is the link target. */
export function deprecationHeaders(successor: string): Record<string, string> {
  return { deprecation: DEPRECATED_AT, sunset: SUNSET_DATE, link: `<${successor}>; rel="successor-version"` }
}

/** The same headers as documented on each response of the operation in OpenAPI. */
export const DEPRECATION_HEADERS = {
  Deprecation: header('RFC 9745: `@1795132800` (2026-11-20T00:00:00Z), when this operation was deprecated.', {
    enum: [DEPRECATED_AT],
  }),
  Sunset: header('RFC 8594: `Thu, 05 Dec 2030 00:00:00 GMT`, when this operation will be removed.', { enum: [SUNSET_DATE] }),
  Link: header('RFC 8288: `</v1/pets>; rel="successor-version"`, the replacement (`GET /pets` with `status`).', {
    maxLength: (deprecationHeaders('x'.repeat(LINK_BASE_MAX_LENGTH + '/pets'.length)).link ?? '').length,
  }),
}
