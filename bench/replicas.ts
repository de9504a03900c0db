// Reads with a streaming replica (docs/deploying.md, "Read replicas" and its capacity table): the service on one
// PostgreSQL primary alone, then on the same primary with one streaming replica of it (DATABASE_REPLICA_URLS), under
// scenario (a)'s list 20 and (d)'s get by id together, in alternating rounds: req/s, each PostgreSQL server's CPU time
// per read (its postmaster and backends, from /proc), and the share of reads the replica served (the service's own
// `animal_store_database_reads_total`). The servers are not pinned: they share the machine with the load.
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { type PostgresReplica, startReplica } from '../scripts/lib/postgres-replica.js'
import { type PostgresServer, startPostgres } from '../scripts/lib/postgres-server.js'
import { type BenchDatabase, seededPostgresDatabase } from './databases.js'
import { type ServerProcess, treeCpuSeconds } from './processes.js'
import { log, median } from './report.js'
import type { BenchServer, Run } from './run.js'
import { SCENARIOS, SEEDED_PETS } from './scenarios.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const SETUPS = ['primary alone', 'primary + replica'] as const
type Setup = (typeof SETUPS)[number]

/** One round of one setup: reads/s, and CPU µs per read in the service and on each PostgreSQL server. */
interface Round {
  reqPerSec: number
  serviceUs: number
  primaryUs: number
  replicaUs: number
  /** Of the reads the service made, the share the replica served (0–1). */
  replicaShare: number
}

/**
 * Runs the comparison on a primary and a replica of its own (started and destroyed here) and prints its table and the
 * capacity it implies; true on a harness failure (an unexpected answer).
 */
export async function replicaCapacity(run: Run): Promise<boolean> {
  const kinds = ['a', 'd'].flatMap((id) => {
    const scenario = SCENARIOS.find((each) => each.id === id)
    if (!scenario) throw new Error(`scenario (${id}) is gone`)
    return scenario.kinds({ seeded: SEEDED_PETS, firstPages: [], nextPages: [] })
  })
  log('\n## replicas: the service on one PostgreSQL, and on the same one with a streaming replica; list 20 and get by id')
  const primary: PostgresServer = await startPostgres()
  run.cleanups.push(() => primary.destroy())
  const { url } = await seededPostgresDatabase(primary, run.node, ROOT, SEEDED_PETS)
  const replica: PostgresReplica = await startReplica(primary)
  run.cleanups.push(() => replica.destroy())
  await replica.caughtUp()
  const onReplica = Object.assign(new URL(replica.url), { pathname: new URL(url).pathname }).href
  const database: BenchDatabase = { kind: 'postgres', url, location: url, destroy: async () => {} }
  const servers: Record<Setup, BenchServer> = {
    'primary alone': await run.start('service', database),
    'primary + replica': await run.start('service', database, { DATABASE_REPLICA_URLS: onReplica }),
  }
  const rounds: Record<Setup, Round[]> = { 'primary alone': [], 'primary + replica': [] }
  let failed = false
  for (let round = 0; round < run.settings.rounds; round++) {
    for (const setup of round % 2 ? [...SETUPS].reverse() : SETUPS) {
      const server = servers[setup]
      const before = { primary: serverCpu(primary), replica: serverCpu(replica), reads: await readsByTarget(server) }
      const measured = await run.load(server, kinds)
      const reads = await readsByTarget(server)
      const served = (target: string) => (reads.get(target) ?? 0) - (before.reads.get(target) ?? 0)
      const total = served('primary') + served('replica-1')
      const each: Round = {
        reqPerSec: measured.reqPerSec,
        serviceUs: measured.cpuUs ?? Number.NaN,
        primaryUs: ((serverCpu(primary) - before.primary) / measured.requests) * 1e6,
        replicaUs: ((serverCpu(replica) - before.replica) / measured.requests) * 1e6,
        replicaShare: total > 0 ? served('replica-1') / total : 0,
      }
      rounds[setup].push(each)
      failed ||= Boolean(measured.problems)
      log(
        `round ${round + 1} ${setup.padEnd(17)} ${each.reqPerSec.toFixed(0).padStart(6)} req/s  CPU per read: service ${each.serviceUs.toFixed(0)} µs, PostgreSQL ` +
          `primary ${each.primaryUs.toFixed(1)} µs, replica ${each.replicaUs.toFixed(1)} µs; replica served ${(each.replicaShare * 100).toFixed(1)} %` +
          `${measured.problems ? `  UNEXPECTED ${measured.problems}` : ''}`,
      )
    }
  }
  const figure = (setup: Setup) => {
    const of = (pick: (round: Round) => number) => median(rounds[setup].map(pick))
    return {
      reqPerSec: of((each) => each.reqPerSec),
      serviceUs: of((each) => each.serviceUs),
      primaryUs: of((each) => each.primaryUs),
      replicaUs: of((each) => each.replicaUs),
      replicaShare: of((each) => each.replicaShare),
    }
  }
  log('\n| setup | reads/s | CPU µs/read: service | PostgreSQL primary | replica | reads the replica served |')
  log('|---|---:|---:|---:|---:|---:|')
  for (const setup of SETUPS) {
    const each = figure(setup)
    log(
      `| ${setup} | ${each.reqPerSec.toFixed(0)} | ${each.serviceUs.toFixed(0)} | ${each.primaryUs.toFixed(1)} | ${each.replicaUs.toFixed(1)} | ${(each.replicaShare * 100).toFixed(1)} % |`,
    )
  }
  const alone = figure('primary alone')
  const replicated = figure('primary + replica')
  // A database core serves 1 s / (CPU per read) reads; reads on replicas add up, one replica per core.
  log('\n| replicas | reads/s per database core (reads/s the replicas can serve, one core each) | |')
  log('|---|---:|---|')
  log(`| 0 (primary alone) | ${(1e6 / alone.primaryUs).toFixed(0)} | measured |`)
  for (const count of [1, 2, 4, 8])
    log(
      `| ${count} | ${((count * 1e6) / replicated.replicaUs).toFixed(0)} | ${count === 1 ? 'measured' : `computed: ${count} × the measured replica`} |`,
    )
  return failed
}

/** The CPU time (s) a PostgreSQL server has used (its postmaster's tree: treeCpuSeconds); NaN when it is not running. */
function serverCpu(server: PostgresServer): number {
  return treeCpuSeconds(server.pid() ?? Number.NaN)
}

/** `animal_store_database_reads_total` of `server` by `target`, from its metrics listener (its stdout names it). */
async function readsByTarget(server: ServerProcess): Promise<Map<string, number>> {
  const origin = /Prometheus metrics on (http:\/\/\S+)\/metrics/.exec(readFileSync(server.stdoutFile, 'utf8'))?.[1]
  if (!origin) throw new Error('the service printed no metrics address')
  const text = await (await fetch(`${origin}/metrics`)).text()
  return new Map(
    [...text.matchAll(/^animal_store_database_reads_total\{target="([^"]+)"\} (\S+)$/gm)].map(([, target = '', value]) => [
      target,
      Number(value),
    ]),
  )
}
