// How long the HTTP server waits on a client, chosen so slow or idle clients cannot tie it up
// (docs/reliability.md, "Server timeouts"): a request must arrive within seconds.

/** Fastify/Node server timeouts, in ms. */
export const SERVER_TIMEOUTS = {
  /**
   * All request headers must arrive within this (slowloris); also closes a new connection that sends
   * nothing. Node: server.headersTimeout. Answered 408 `request_timeout`.
   */
  headersTimeout: 5_000,
  /** The whole request, headers and body, must arrive within this. Node: server.requestTimeout. */
  requestTimeout: 10_000,
  /** A socket idle this long while a request or its response is in progress is destroyed. Node: server.setTimeout. */
  connectionTimeout: 30_000,
  /**
   * An idle keep-alive connection is kept this long between requests: above the 60 s idle timeout of
   * common load balancers, so the balancer, not the service, closes it first (no reset on reuse).
   */
  keepAliveTimeout: 72_000,
  /** How often Node checks open connections against headersTimeout and requestTimeout. */
  connectionsCheckingInterval: 1_000,
} as const
