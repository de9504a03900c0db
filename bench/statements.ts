// `tsx bench/statements.ts`: what each read costs PostgreSQL itself, statement by statement. On a throwaway
// PostgreSQL seeded as the bench seeds it, EXPLAIN (ANALYZE, BUFFERS) of the service's compiled statements
// (src/store/pet-sql.ts, with the values the bench's requests bind) beside the plain `SELECT … ORDER BY id LIMIT $1`
// a typical app sends for the same request; medians of ROUNDS executions each (docs/benchmarks.md, PostgreSQL per
// statement).
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { compilePetStatements } from '../src/store/pet-sql.js'
import { postgresDatabase } from './databases.js'
import { SEEDED_PETS } from './scenarios.js'

const ROUNDS = 51
const STATEMENTS = compilePetStatements('postgres')
const COLUMNS = 'id, name, category_id as "categoryId", status'

/** One request's statement as the service binds it, and the one a typical app sends. */
const CASES = [
  {
    name: 'list 20',
    service: { sql: STATEMENTS.list.get('all-first')?.sql, values: STATEMENTS.list.get('all-first')?.bind({ limit: 21 }) },
    typical: { sql: `select ${COLUMNS} from pets order by id limit $1`, values: [21] },
  },
  {
    name: 'list 100 by status',
    service: {
      sql: STATEMENTS.list.get('status-first')?.sql,
      values: STATEMENTS.list.get('status-first')?.bind({ limit: 101, status: 'available' }),
    },
    typical: { sql: `select ${COLUMNS} from pets where status = $1 order by id limit $2`, values: ['available', 101] },
  },
  {
    name: 'get by id',
    service: { sql: STATEMENTS.find.sql, values: STATEMENTS.find.bind({ id: '4242' }) },
    typical: { sql: `select ${COLUMNS} from pets where id = $1`, values: ['4242'] },
  },
]

interface Plan {
  'Planning Time': number
  'Execution Time': number
  Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number; 'Node Type': string }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

/** EXPLAIN (ANALYZE, BUFFERS) of `sql` with `values`, ROUNDS times: median planning and execution ms, blocks, plan root. */
async function explain(client: pg.Client, sql: string, values: unknown[]) {
  const plans: Plan[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const { rows } = await client.query<{ 'QUERY PLAN': Plan[] }>(`explain (analyze, buffers, format json) ${sql}`, values)
    const plan = rows[0]?.['QUERY PLAN'][0]
    if (!plan) throw new Error(`no plan for ${sql}`)
    plans.push(plan)
  }
  const last = plans.at(-1) as Plan
  return {
    planningMs: median(plans.map((plan) => plan['Planning Time'])),
    executionMs: median(plans.map((plan) => plan['Execution Time'])),
    blocks: last.Plan['Shared Hit Blocks'] + last.Plan['Shared Read Blocks'],
    root: last.Plan['Node Type'],
  }
}

async function main(): Promise<void> {
  const root = fileURLToPath(new URL('..', import.meta.url))
  const node = `${root}node_modules/.bin/node`
  const database = await postgresDatabase(node, root, SEEDED_PETS)
  const client = new pg.Client({ connectionString: database.url })
  try {
    await client.connect()
    console.log(`EXPLAIN (ANALYZE, BUFFERS), medians of ${ROUNDS}, ${SEEDED_PETS} pets; ms of PostgreSQL's own time`)
    console.log('| request | statement | planning ms | execution ms | buffers | plan |\n|---|---|---:|---:|---:|---|')
    for (const each of CASES) {
      for (const [who, statement] of [
        ['service', each.service],
        ['typical app', each.typical],
      ] as const) {
        if (!statement.sql || !statement.values) throw new Error(`no statement for ${each.name}`)
        const plan = await explain(client, statement.sql, statement.values)
        console.log(
          `| ${each.name} | ${who} | ${plan.planningMs.toFixed(3)} | ${plan.executionMs.toFixed(3)} | ${plan.blocks} | ${plan.root} |`,
        )
      }
    }
  } finally {
    await client.end()
    await database.destroy()
  }
}

main().then(
  () => process.exit(),
  (error: unknown) => {
    process.stderr.write(`statements: ${error instanceof Error ? error.message : String(error)}\n`)
    process.exit(1)
  },
)
