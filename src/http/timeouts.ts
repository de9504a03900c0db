// How long the HTTP server waits on a client, chosen so slow or idle clients cannot tie it up
// (README "Limits"): a request must arrive within seconds, an idle socket is closed.

/** Fastify/Node server timeouts, in ms. */
export const SERVER_TIMEOUTS = {
  /** All request headers must arrive within this (slowloris). Node: server.headersTimeout. */
  headersTimeout: 5_000,
  /** The whole request, headers and body, must arrive within this. Node: server.requestTimeout. */
  requestTimeout: 10_000,
  /** A socket with no traffic at all for this long is closed. Node: server.setTimeout. */
  connectionTimeout: 30_000,
  /**
   * An idle keep-alive connection is kept this long between requests: above the 60 s idle timeout of
   * common load balancers, so the balancer, not the service, closes it first (no reset on reuse).
   */
  keepAliveTimeout: 72_000,
  /** How often Node checks open connections against headersTimeout and requestTimeout. */
  connectionsCheckingInterval: 1_000,
} as const
