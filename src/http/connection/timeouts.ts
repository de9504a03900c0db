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
  /**
   * A request or response that makes no progress this long is dropped. Node: server.setTimeout (nothing
   * read or written); for a response the client does not read, the connection cap's check of write
   * progress (connection-cap.ts), since Node postpones its own timer once while a write is queued.
   */
  connectionTimeout: 30_000,
  /**
   * A response that has made no write progress this long (its client is not reading it) may be closed
   * to make room for a new connection when MAX_CONNECTIONS are open (connection-cap.ts).
   */
  evictableStall: 2_000,
  /**
   * A connection that has sent nothing this long since it opened may be closed to make room before
   * idle keep-alive ones (connection-cap.ts); a client sends its request as soon as it connects.
   */
  evictableSilence: 250,
  /**
   * An idle keep-alive connection is kept this long between requests: above the 60 s idle timeout of
   * common load balancers, so the balancer, not the service, closes it first (no reset on reuse).
   */
  keepAliveTimeout: 72_000,
  /**
   * How often Node checks open connections against headersTimeout and requestTimeout, and the
   * connection cap checks responses for write progress.
   */
  connectionsCheckingInterval: 1_000,
} as const
