// OpenTelemetry tracing for `serve`: started only when an OTLP endpoint is configured, before Fastify
// and pg are loaded (their instrumentations patch them as they load); off, nothing here is loaded.
import cluster from 'node:cluster'
import { type Attributes, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { FastifyInstance } from 'fastify'
import { SERVICE_VERSION } from './build-info.js'
import type { Config } from './config.js'
import { clientAddress } from './http/pipeline/client-address.js'

/** The name spans carry as `service.name` unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES set one. */
export const DEFAULT_SERVICE_NAME = 'animal-store'

/** Tracing as started: what the rest of `serve` hooks into. */
export interface Tracing {
  /** pino `mixin`: `trace_id`, `span_id` and `trace_flags` of the active span, or nothing outside one. */
  logFields(): Record<string, string>
  /**
   * `store` with a CLIENT span (`db.system.name` = `system`) around every method call made inside a
   * traced request; calls outside one (key reloads) are not traced. For a store that no
   * instrumentation sees (SQLite: reads here, creates through the writer thread, so the span is the
   * round trip).
   */
  traceStore<T extends object>(store: T, system: string, collection: string): T
  /** Names each HTTP server span `METHOD ROUTE` and sets `http.route` (the instrumentation knows only the method). */
  nameServerSpans(app: FastifyInstance): void
  /** Exports the spans still buffered, then stops; call it last when closing. */
  shutdown(): Promise<void>
}

/**
 * Starts the OpenTelemetry SDK for this process when `tracing` is set and the process serves requests
 * (a cluster primary with workers does not): W3C `traceparent`/`baggage` propagation, server spans for incoming
 * HTTP (instrumentation-http; `GET /metrics` scrapes are not traced), a span per PostgreSQL query
 * inside a request (instrumentation-pg), spans batched to the OTLP/HTTP endpoint in `tracing.protocol`.
 * The SDK reads its other standard variables itself (sampler, service name and resource, exporter
 * headers, timeouts, batch sizes; docs/deploying.md, "Tracing"). Resolves to undefined when off.
 */
export async function startTracing({
  tracing: config,
  workers,
}: Pick<Config, 'tracing' | 'workers'>): Promise<Tracing | undefined> {
  if (!config || (cluster.isPrimary && workers > 1)) return undefined
  const provider = await startProvider(config)
  const tracer = provider.getTracer('animal-store', SERVICE_VERSION)
  return {
    logFields,
    traceStore: (store, system, collection) => traceStore(tracer, store, system, collection),
    nameServerSpans,
    shutdown: () => provider.shutdown(),
  }
}

/**
 * Loads the SDK, the instrumentations and the exporter of `config.protocol` (none of them is loaded
 * when tracing is off), and registers the tracer provider and the instrumentations.
 */
async function startProvider(config: NonNullable<Config['tracing']>) {
  const [{ NodeTracerProvider, BatchSpanProcessor }, resources, { registerInstrumentations }, http, pg, exporter] =
    await Promise.all([
      import('@opentelemetry/sdk-trace-node'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/instrumentation'),
      import('@opentelemetry/instrumentation-http'),
      import('@opentelemetry/instrumentation-pg'),
      config.protocol === 'http/json'
        ? import('@opentelemetry/exporter-trace-otlp-http')
        : import('@opentelemetry/exporter-trace-otlp-proto'),
    ])
  // Ours first, so that OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (envDetector) override them.
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': DEFAULT_SERVICE_NAME, 'service.version': SERVICE_VERSION }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new exporter.OTLPTraceExporter())],
  })
  provider.register()
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new http.HttpInstrumentation({
        // The service makes no outgoing HTTP calls but the exporter's own; scrapes are not requests.
        disableOutgoingRequestInstrumentation: true,
        ignoreIncomingRequestHook: (request) => request.url === '/metrics',
        // Not what the client claims: the peer (nameServerSpans sets the TRUST_PROXY-aware address),
        // and the query's parameter names only, since a value may be a secret sent by mistake.
        startIncomingSpanHook: (request) => {
          const query = queryNames(String((request as { url?: string }).url ?? ''))
          return { 'client.address': request.socket?.remoteAddress ?? '', ...(query !== undefined && { 'url.query': query }) }
        },
      }),
      new pg.PgInstrumentation({ requireParentSpan: true }),
    ],
  })
  return provider
}

/** The parameter names of `url`'s query, each value replaced by `REDACTED` (`limit=REDACTED&cursor=REDACTED`); undefined without a query. */
function queryNames(url: string): string | undefined {
  const query = url.indexOf('?')
  if (query < 0) return undefined
  return [...new URLSearchParams(url.slice(query + 1)).keys()].map((name) => `${encodeURIComponent(name)}=REDACTED`).join('&')
}

/** Tracing.logFields. */
function logFields(): Record<string, string> {
  const span = trace.getActiveSpan()
  if (!span) return {}
  const { traceId, spanId, traceFlags } = span.spanContext()
  return { trace_id: traceId, span_id: spanId, trace_flags: traceFlags.toString(16).padStart(2, '0') }
}

/** Tracing.traceStore, its spans started by `tracer`. */
function traceStore<T extends object>(tracer: Tracer, store: T, system: string, collection: string): T {
  const traced = { ...store } as Record<string, unknown>
  for (const [name, method] of Object.entries(store)) {
    if (typeof method !== 'function') continue
    const attributes: Attributes = {
      'db.system.name': system,
      'db.operation.name': name,
      'db.collection.name': collection,
    }
    traced[name] = (...args: unknown[]) => {
      if (!trace.getActiveSpan()) return method.apply(store, args)
      return tracer.startActiveSpan(`${name} ${collection}`, { kind: SpanKind.CLIENT, attributes }, async (span) => {
        try {
          return await method.apply(store, args)
        } catch (error) {
          span.recordException(error as Error)
          span.setStatus({ code: SpanStatusCode.ERROR })
          throw error
        } finally {
          span.end()
        }
      })
    }
  }
  return traced as T
}

/** Tracing.nameServerSpans. */
function nameServerSpans(app: FastifyInstance): void {
  app.addHook('onResponse', (request, _reply, done) => {
    const route = request.routeOptions.url
    const span = trace.getActiveSpan()
    if (span) span.setAttribute('client.address', clientAddress(request))
    if (route && span) {
      span.updateName(`${request.method} ${route}`)
      span.setAttribute('http.route', route)
    }
    done()
  })
}
