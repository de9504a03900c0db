// `animal-store migrate`: applies pending schema migrations and reports what it did.
import type { Config } from '../config.js'
import { openStore } from '../store/index.js'

/** Applies pending migrations to the configured database; prints their names or "up to date". */
export async function migrate(config: Config, out: NodeJS.WritableStream): Promise<void> {
  const store = openStore(config.database)
  try {
    const applied = await store.migrate()
    out.write(applied.length > 0 ? `Applied migrations: ${applied.join(', ')}\n` : 'Database schema is up to date.\n')
  } finally {
    await store.close()
  }
}
