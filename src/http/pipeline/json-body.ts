// Request-body JSON parsing that never rounds: int64 values arrive exactly (src/int64.ts).
// JSON.parse turns 9007199254740993 into …992; lossless-json hands us each number's source text.

import { parse as parseContentType } from 'fast-content-type-parse'
import type { FastifyRequest } from 'fastify'
import { parse } from 'lossless-json'
import { parseJsonNumber } from '../../int64.js'
import { ApiError, BODY_REQUIRED_MESSAGE } from '../errors.js'

const utf8 = new TextDecoder('utf-8', { fatal: true })

// The charset parameter of a Content-Type (RFC 9110 §8.3.1), quoted values understood; undefined
// when absent or when the header does not parse (the media type check then refuses it).
function contentTypeCharset(header: string): string | undefined {
  try {
    return parseContentType(header).parameters.charset
  } catch {
    return undefined
  }
}

/**
 * Fastify content-type parser for `application/json` (RFC 8259: UTF-8 only). Throws
 * ApiError `unsupported_media_type` for another charset and `invalid_json` for bytes that are not
 * UTF-8 or text that is not JSON (a member name repeated with another value included; an exact
 * repeat is one member, as JSON.parse and lossless-json treat it).
 */
export function parseJsonBody(request: FastifyRequest, body: Buffer): unknown {
  const charset = contentTypeCharset(request.headers['content-type'] ?? '')
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new ApiError('unsupported_media_type', { message: 'The request body must be JSON encoded as UTF-8.' })
  }
  let text: string
  try {
    text = utf8.decode(body)
  } catch (cause) {
    throw new ApiError('invalid_json', { message: 'The request body is not valid UTF-8.', cause })
  }
  if (/^[ \t\n\r]*$/.test(text)) throw new ApiError('invalid_request', { message: BODY_REQUIRED_MESSAGE, details: [] })
  try {
    return parse(text, null, parseJsonNumber)
  } catch (cause) {
    const reason = cause instanceof SyntaxError ? `: ${cause.message}` : ''
    throw new ApiError('invalid_json', { message: `The request body is not valid JSON${reason}.`, cause })
  }
}
