// The client address of a request: what the auth-failure limit counts, the log line's `client` and a
// trace's `client.address` (docs/security.md, "Bounded state").
import { isIP } from 'node:net'
import type { FastifyRequest } from 'fastify'

/**
 * Fastify's `request.ip` (the right-most X-Forwarded-For entry not sent by a TRUST_PROXY address,
 * else the socket's peer) when it is an IP address; else the socket's peer, the listed proxy that
 * forwarded the value. So a forwarded value that is not an address (any text up to the header limit)
 * never becomes a client: it cannot take a budget of its own nor a row of the limit's table of its
 * own size, nor reach logs and traces. An IPv4 or IPv6 address in text form, at most 45 characters.
 */
export function clientAddress(request: FastifyRequest): string {
  const { ip } = request
  return isIP(ip) !== 0 ? ip : (request.socket.remoteAddress ?? '')
}
