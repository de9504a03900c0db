// Conditional reads (RFC 9110 §13.1.2): the options that carry If-None-Match and the result that
// says whether the service answered 304 Not Modified, kept apart from the client's retry core.
import type { CallOptions } from './transport.js'

/** Options of a conditional read: CallOptions and the entity tag(s) of the copy the caller holds. */
export interface ConditionalOptions extends CallOptions {
  /**
   * Sent as If-None-Match: an `ETag` from an earlier answer (or a list of them, or `*`). While it
   * still names the current representation, the service answers 304 without a body.
   */
  ifNoneMatch?: string | undefined
}

/**
 * The result of a conditional read: `notModified: true` when the service answered 304 (keep the copy
 * you hold), else the fresh `data`; `etag` is the representation's ETag either way.
 */
export type Conditional<T> =
  | { notModified: true; etag: string | undefined }
  | { notModified: false; data: T; etag: string | undefined }

/** Turns a parser of a 200's body into one of a conditional read's answer (200 or 304). */
export function conditionally<T>(
  parse: (text: string, response: Response) => T,
): (text: string, response: Response) => Conditional<T> {
  return (text, response) => {
    const etag = response.headers.get('etag') ?? undefined
    return response.status === 304 ? { notModified: true, etag } : { notModified: false, data: parse(text, response), etag }
  }
}
