// The request id: the client's own `X-Request-Id` when it is well-formed, so a client can trace its
// request through our logs, else a new UUID. Sent back as `X-Request-Id` and logged as `reqId`.

/** The longest X-Request-Id taken from a client, in characters (a generated one is a 36-character UUID). */
export const MAX_REQUEST_ID_LENGTH = 128
// 1–128 visible ASCII characters (RFC 9110 §5.5 VCHAR): nothing that could break a header or a log line.
const WELL_FORMED = new RegExp(`^[\\x21-\\x7e]{1,${MAX_REQUEST_ID_LENGTH}}$`)

/** The client's request id when `header` is one well-formed value, else undefined. */
export function requestIdFrom(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && WELL_FORMED.test(header) ? header : undefined
}
