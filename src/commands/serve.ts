// `animal-store serve`: config → store → migrate → first key → app → listen, and a graceful close
// on SIGTERM/SIGINT (stop accepting, finish in-flight requests, close the database, within 10 s).
// With WORKERS > 1 the primary runs the cluster (cluster.ts) and each worker runs the app.
import cluster from 'node:cluster'
import closeWithGrace from 'close-with-grace'
import { buildApp } from '../app.js'
import type { Config } from '../config.js'
import { createKeyVerifier } from '../http/auth.js'
import { createMetricsRegistry } from '../http/metrics.js'
import { createLogger } from '../logger.js'
import { openStore } from '../store/index.js'
import { clusterMetricsSource, startCluster } from './cluster.js'
import { createFirstKeyIfNone } from './keys.js'

/** How long (ms) a graceful close may take before the process is ended anyway. */
export const SHUTDOWN_GRACE_MS = 10_000

/**
 * Runs the service until a signal closes it. Prints the listening URL, and the first API key when
 * none existed, to `out`. Rejects (after closing what it opened) if it cannot start.
 */
export async function serve(config: Config, out: NodeJS.WritableStream = process.stdout): Promise<void> {
  if (config.workers > 1 && cluster.isPrimary) {
    const { address, port, firstKey } = await startCluster(config, SHUTDOWN_GRACE_MS)
    announce(out, address, port, firstKey, config.workers)
    return
  }
  const listening = await runServer(config, cluster.isWorker)
  if (listening) announce(out, listening.address, listening.port, listening.firstKey, 1)
}

/** One server process (alone, or a cluster worker, which leaves migrations and the first key to the primary). */
async function runServer(
  config: Config,
  isWorker: boolean,
): Promise<{ address: string; port: number; firstKey: string | undefined } | undefined> {
  const logger = createLogger(config.logLevel)
  const store = openStore(config.database, (error) => logger.warn({ err: error }, 'database connection lost'))
  let closeApp = async () => {}
  try {
    let firstKey: string | undefined
    if (!isWorker) {
      const applied = await store.migrate()
      if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')
      if (config.apiKeys.length === 0) firstKey = await createFirstKeyIfNone(store.apiKeys)
    }
    const keys = await createKeyVerifier(store.apiKeys, config.apiKeys, logger)
    const registry = config.metricsEnabled ? createMetricsRegistry(() => store.poolStats()) : undefined
    const metrics = registry && { registry, source: isWorker ? clusterMetricsSource(registry) : undefined }
    const app = await buildApp({ config, store, keys, logger, metrics })
    closeApp = async () => {
      await app.close()
      keys.close()
    }
    closeWithGrace({ delay: SHUTDOWN_GRACE_MS, logger }, async ({ signal, err }) => {
      if (err) logger.error({ err }, 'closing after an unexpected error')
      else logger.info({ signal }, 'closing: finishing in-flight requests')
      await closeApp()
      await store.close()
    })
    await app.listen({ port: config.port, host: config.host })
    if (isWorker) return undefined
    const address = app.server.address()
    if (typeof address !== 'object' || address === null) throw new Error('the server has no TCP address')
    return { address: address.address, port: address.port, firstKey }
  } catch (error) {
    await closeApp()
    await store.close()
    throw error
  }
}

function announce(
  out: NodeJS.WritableStream,
  address: string,
  port: number,
  firstKey: string | undefined,
  workers: number,
): void {
  const base = `http://${address.includes(':') ? `[${address}]` : address}:${port}/v1`
  out.write(firstKey ? firstKeyBanner(firstKey, base) : keyHint())
  const processes = workers > 1 ? ` with ${workers} workers` : ''
  out.write(`Animal Store listening on ${base}${processes} (OpenAPI document: ${base}/openapi.json)\n`)
}

function firstKeyBanner(key: string, base: string): string {
  const rule = '='.repeat(72)
  return `${rule}
No API key existed, so one was created. Store it now; it is not shown again:

    ${key}

Try it:  curl -H "Authorization: Bearer ${key}" ${base}/pets
More keys: npx animal-store keys create --name NAME   (see: npx animal-store keys --help)
${rule}
`
}

function keyHint(): string {
  return 'API keys: create one with `npx animal-store keys create --name NAME`, or set API_KEYS.\n'
}
