#!/usr/bin/env node
// The operator CLI (`npx animal-store <command>`): the command table, and the only place that sets
// an exit code. Every failure ends as one line on stderr and exit code 1.
// Commands are imported when run, so `--help` does not load Fastify and the database drivers.
import { Command } from 'commander'
import type { KeysCreateOptions } from './commands/keys.js'
import { CONFIGURATION_VARIABLES, loadConfig, loadCopyUrls } from './config.js'
import { DEFAULT_KEY_SCOPE, KEY_SCOPES, MAX_RATE_LIMIT_PER_MINUTE } from './key-grants.js'
import { redactCredentials } from './redact.js'

const program = new Command('animal-store')
  .description('Animal Store: a JSON-over-HTTP service that keeps a collection of animals.')
  .addHelpText('after', environmentHelp())
  .showHelpAfterError('(run with --help for usage)')
  // Commander echoes a mistyped option with its value (`--replac=postgres://user:PASSWORD@…`). Set
  // before the subcommands are added, which inherit it.
  .configureOutput({ outputError: (text, write) => write(redactCredentials(text)) })

program
  .command('serve')
  .description('run the HTTP service (migrates the database first; creates and prints a first API key if none exists)')
  .action(async () => {
    const config = loadConfig()
    // Tracing patches http and pg as they load, so it starts before the service's modules are
    // imported; off, none of it is loaded.
    const tracing = config.tracing ? await (await import('./tracing.js')).startTracing(config) : undefined
    return (await import('./commands/serve.js')).serve(config, process.stdout, tracing)
  })

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .action(async () => (await import('./commands/migrate.js')).migrate(loadConfig(), process.stdout))

const keys = program.command('keys').description('manage API keys (stored as SHA-256 hashes)')
keys
  .command('create')
  .description('create an API key and print it once')
  .requiredOption('--name <name>', 'a label for the key, such as the client it is for')
  .option(
    '--scope <scope>',
    `what the key may do: ${KEY_SCOPES.join(' or ')}; read lists and reads pets only (the key to put in browser pages and other places the public can see), write may also create them`,
    DEFAULT_KEY_SCOPE,
  )
  .option(
    '--rate-limit <n>',
    `the key's own requests per minute, 0 to ${MAX_RATE_LIMIT_PER_MINUTE} (0 = no limit); without it, RATE_LIMIT_PER_MINUTE`,
  )
  .action(async (options: KeysCreateOptions) =>
    (await import('./commands/keys.js')).keysCreate(loadConfig(), options, process.stdout),
  )
keys
  .command('list')
  .description('list keys: id, name, prefix, scope, rate limit, created, revoked (never the key itself)')
  .action(async () => (await import('./commands/keys.js')).keysList(loadConfig(), process.stdout))
keys
  .command('revoke')
  .description('revoke a key; running servers refuse it within 2 seconds')
  .argument('<id>', 'the key id, as shown by `keys list`')
  .action(async (id: string) => (await import('./commands/keys.js')).keysRevoke(loadConfig(), id, process.stdout))

program
  .command('copy')
  .description(
    'copy every pet and API key (hashes, revoked ones too, ids kept) from one database to another, then verify counts and checksums',
  )
  .option(
    '--from <url>',
    'the database to copy from: sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE (default: COPY_FROM_URL, else DATABASE_URL)',
  )
  .option(
    '--to <url>',
    'the database to copy into (migrated first; default: COPY_TO_URL); refused if it holds any pet or key, unless --replace',
  )
  .option('--replace', "empty the target's pets and API keys first, in the same transaction as the copy")
  .addHelpText(
    'after',
    "\nExample: COPY_TO_URL=postgres://app:PASSWORD@db.example.com:5432/animals animal-store copy --from sqlite:data/animal-store.db\nA password given in a flag is visible to every local user (ps): pass PostgreSQL URLs in COPY_FROM_URL / COPY_TO_URL.\nThe copy is one transaction on the target: it commits only after both sides' row counts and SHA-256 checksums match.\n",
  )
  .action(async (options: { from?: string; to?: string; replace?: boolean }) =>
    (await import('./commands/copy.js')).copy({ ...loadCopyUrls(options), replace: options.replace === true }, process.stdout),
  )

program
  .command('backup')
  .description(
    'copy the SQLite database into a new file (0600) while the service runs, then verify the copy (integrity_check, row counts); PostgreSQL: use pg_dump',
  )
  .requiredOption('--to <file>', 'the new file; an existing file is never overwritten')
  .action(async (options: { to: string }) =>
    (await import('./commands/backup.js')).backup(loadConfig(), options.to, process.stdout, process.stderr),
  )

program
  .command('restore')
  .description(
    'replace the SQLite database with a verified backup, keeping the current one aside; refused while a service has it open; PostgreSQL: use pg_restore',
  )
  .requiredOption('--from <file>', 'the backup to restore (as made by `backup`, sqlite3 .backup or VACUUM INTO)')
  .option('--force', 'restore even though another process (a running service) has the database open; restart it afterwards')
  .action(async (options: { from: string; force?: boolean }) =>
    (await import('./commands/restore.js')).restore(
      loadConfig(),
      options.from,
      options.force === true,
      process.stdout,
      process.stderr,
    ),
  )

/**
 * The `--help` epilogue: every variable of CONFIGURATION_VARIABLES (src/config.ts, the same source as
 * the README's table) with its default and the first sentence of its meaning, without Markdown.
 */
function environmentHelp(): string {
  const plain = (text: string) => text.replaceAll('`', '')
  const lines = CONFIGURATION_VARIABLES.map((variable) => {
    const names = variable.file ? `${variable.name} (or ${variable.name}_FILE)` : variable.name
    const sentence = /^.*?\.(?=\s|$)/.exec(variable.meaning)?.[0] ?? variable.meaning
    return `  ${names} [default: ${plain(variable.default)}]\n      ${plain(sentence)}`
  })
  return `\nConfiguration comes from these environment variables (details: the README, "Configuration"):\n${lines.join('\n')}\n`
}

/** Oldest Node.js major line supported: 20 is end of life, and the SQLite driver (better-sqlite3 13) needs 22. */
const MIN_NODE_MAJOR = 22

if (Number(process.versions.node.split('.')[0]) < MIN_NODE_MAJOR) {
  process.stderr.write(
    `animal-store: needs Node.js ${MIN_NODE_MAJOR} or newer (this is ${process.version}); \`npm start\` runs the project's own Node.js 24.\n`,
  )
  process.exitCode = 1
} else {
  program.parseAsync().catch((error: unknown) => {
    process.stderr.write(`animal-store: ${redactCredentials(error instanceof Error ? error.message : String(error))}\n`)
    process.exitCode = 1
  })
}
