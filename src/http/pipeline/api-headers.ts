// The fixed headers of every API response (everything under /v1, and every error response): no
// cache may keep one (each depends on the key and on data that changes), and no browser may sniff a
// JSON body into something it would run.

/** Sent on every API response: `Cache-Control: no-store` (RFC 9111 §5.2.2.5) and `X-Content-Type-Options: nosniff`. */
export const API_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
})

/** The prefix of the API's paths; routes under it send API_HEADERS. */
export const API_PREFIX = '/v1/'
