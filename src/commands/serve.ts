// `animal-store serve`: config → store → migrate → first key → app → listen, and a graceful close
// on SIGTERM/SIGINT (stop accepting, finish in-flight requests, close the database, within 10 s).
import type { AddressInfo } from 'node:net'
import closeWithGrace from 'close-with-grace'
import { buildApp } from '../app.js'
import type { Config } from '../config.js'
import { createKeyVerifier } from '../http/auth.js'
import { createLogger } from '../logger.js'
import { openStore } from '../store/index.js'
import { createFirstKeyIfNone } from './keys.js'

/** How long (ms) a graceful close may take before the process is ended anyway. */
export const SHUTDOWN_GRACE_MS = 10_000

/**
 * Runs the service until a signal closes it. Prints the listening URL, and the first API key when
 * none existed, to `out`. Rejects (after closing what it opened) if it cannot start.
 */
export async function serve(config: Config, out: NodeJS.WritableStream = process.stdout): Promise<void> {
  const logger = createLogger(config.logLevel)
  const store = openStore(config.database, (error) => logger.warn({ err: error }, 'database connection lost'))
  let closeApp = async () => {}
  try {
    const applied = await store.migrate()
    if (applied.length > 0) logger.info({ migrations: applied }, 'database migrated')
    const firstKey = config.apiKeys.length === 0 ? await createFirstKeyIfNone(store.apiKeys) : undefined
    const keys = await createKeyVerifier(store.apiKeys, config.apiKeys, logger)
    const app = await buildApp({ config, store, keys, logger })
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
    const { address, port } = app.server.address() as AddressInfo
    const base = `http://${address.includes(':') ? `[${address}]` : address}:${port}/v1`
    out.write(firstKey ? firstKeyBanner(firstKey, base) : keyHint())
    out.write(`Animal Store listening on ${base} (OpenAPI document: ${base}/openapi.json)\n`)
  } catch (error) {
    await closeApp()
    await store.close()
    throw error
  }
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
