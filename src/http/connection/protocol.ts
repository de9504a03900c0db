// HTTP/1.1 protocol edge cases the service answers itself rather than leaving to Node's defaults:
// a missing Host (RFC 9112 §3.2), an `Expect` other than 100-continue (RFC 9110 §10.1.1), and a
// client that half-closes after its request. Node's own answers to these would be bare texts.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { BODY_LIMIT_BYTES } from '../../schemas.js'
import { ApiError } from '../errors.js'

/**
 * Fastify server options for the above: Node answers an HTTP/1.1 request without Host with a bare
 * 400, so the check is left to missingHost (answered with the Error body instead).
 */
export const PROTOCOL_SERVER_OPTIONS = { requireHostHeader: false } as const

/** ApiError `invalid_request` for an HTTP/1.1 request without a Host header (RFC 9112 §3.2), else undefined. */
export function missingHost(request: FastifyRequest): ApiError | undefined {
  if (request.raw.httpVersion !== '1.1' || request.headers.host !== undefined) return undefined
  return new ApiError('invalid_request', { message: 'An HTTP/1.1 request needs a Host header (RFC 9112 §3.2).', details: [] })
}

/** Whether the request declares a body (RFC 9112 §6.3) that has not been read to its end. */
export function hasUnreadBody(request: FastifyRequest): boolean {
  const { headers } = request
  const declared =
    headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')
  return declared && !request.raw.complete
}

/**
 * Sends `100 Continue` (RFC 9110 §10.1.1) when the request asks for it and its body would be read:
 * call once it is authenticated. A `Content-Length` over BODY_LIMIT_BYTES gets no `100`, only the
 * final 413 at once, so that the client never starts sending a body already refused.
 */
export function continueIfExpected(request: FastifyRequest, reply: FastifyReply): void {
  if (!/^100-continue$/i.test(request.headers.expect ?? '') || request.raw.complete) return
  if (Number(request.headers['content-length'] ?? 0) > BODY_LIMIT_BYTES) return
  reply.raw.writeContinue()
}

/** Installs the server-level behaviour on `app.server`: call once, after Fastify is created. */
export function installProtocolHandling(app: FastifyInstance): void {
  // Node answers `Expect: 100-continue` with `100 Continue` at once, before anyone checked the key;
  // the request pipeline sends it after authentication instead (continueIfExpected).
  app.server.on('checkContinue', (request, response) => app.server.emit('request', request, response))
  // Node answers an `Expect` other than 100-continue with a bare 417 of its own; RFC 9110 §10.1.1
  // allows ignoring it, so the request is served like any other.
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response))
  // A client that half-closes after its request (shutdown(SHUT_WR)) still gets its answer, instead
  // of Node closing the socket before an asynchronous handler can respond.
  const server: typeof app.server & { httpAllowHalfOpen?: boolean } = app.server
  server.httpAllowHalfOpen = true
}
