// `animal-store migrate`: applies pending schema migrations and reports what it did.
import type { Config } from '../config.js'
import { openStore } from '../store/index.js'

/**
 * Applies pending migrations to the configured database; prints their names or "up to date", and
 * the migrations of a newer release it found applied.
 */
export async function migrate(config: Config, out: NodeJS.WritableStream): Promise<void> {
  const store = await openStore(config.database)
  try {
    const { applied, newer } = await store.migrate()
    if (newer.length > 0) out.write(`The database was migrated by a newer release (${newer.join(', ')}); nothing to apply.\n`)
    else out.write(applied.length > 0 ? `Applied migrations: ${applied.join(', ')}\n` : 'Database schema is up to date.\n')
  } finally {
    await store.close()
  }
}
