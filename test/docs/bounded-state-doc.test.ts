// docs/security.md "Bounded state" against the code: each bound the table states is the constant
// the code holds, so neither can change alone.
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import { METHODS } from 'node:http'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY, DEFAULT_MAX_CONNECTIONS } from '../../src/config.js'
import { MAX_CACHED_VERDICTS } from '../../src/http/pipeline/key-cache.js'
import { MAC_CACHE_ENTRIES } from '../../src/http/routes/cursor.js'
import { PET_CACHE_CHARS } from '../../src/http/routes/pet-cache.js'
import { STATEMENT_CACHE_ENTRIES } from '../../src/store/index.js'
import { MAX_REPLY_BYTES } from '../../src/store/resp-connection.js'
import { REPO_ROOT } from '../support/cli-process.js'

const security = readFileSync(join(REPO_ROOT, 'docs/security.md'), 'utf8')
const table = security.slice(security.indexOf('## Bounded state'), security.indexOf('## Dependencies'))
const n = (value: number) => value.toLocaleString('en-US')

/** The table's row whose first cell starts with `state`. */
function row(state: string): string {
  const found = table.split('\n').find((line) => line.startsWith(`| ${state}`))
  assert.ok(found, `docs/security.md "Bounded state" has a row for ${state}`)
  return found
}

describe('docs/security.md "Bounded state"', () => {
  it('states the bound each cache holds in the code', () => {
    assert.ok(row('Key verdicts').includes(`at most ${n(MAX_CACHED_VERDICTS)} verdicts`))
    assert.ok(row('Cursor MACs').includes(`at most ${n(MAC_CACHE_ENTRIES)} entries`))
    assert.ok(row('Pets kept for getPet').includes(`at most ${n(PET_CACHE_CHARS)} characters`))
    assert.ok(row('Prepared SQLite statements').includes(`at most ${n(STATEMENT_CACHE_ENTRIES)}`))
    assert.ok(row('Request metrics').includes(`the ${METHODS.length} methods Node's parser accepts`))
    assert.ok(row('A reply of the rate-limit store').includes(`at most ${n(MAX_REPLY_BYTES)} bytes (\`MAX_REPLY_BYTES\`)`))
    assert.ok(row('Connections').includes(`\`MAX_CONNECTIONS\` (${n(DEFAULT_MAX_CONNECTIONS)})`))
    assert.ok(
      row('Idempotency-Key records').includes(
        `\`IDEMPOTENCY_RECORDS_PER_KEY\` (${n(DEFAULT_IDEMPOTENCY_RECORDS_PER_KEY)}) per API key`,
      ),
    )
  })

  it('names a file of the code for each state kept in memory, and each file exists', () => {
    const lines = table.split('\n')
    const header = lines.findIndex((line) => line.startsWith('| State |'))
    const end = lines.findIndex((line, index) => index > header && !line.startsWith('|'))
    const rows = lines.slice(header + 2, end)
    assert.ok(rows.length >= 10, `${rows.length} rows`)
    // Each row names its file, or "same file" (the row above's), or keeps its state in the database.
    for (const line of rows) {
      assert.match(line.split(' | ')[0] ?? '', /`src\/[^`]+\.ts`|\(same file\)|\(database/, `where: ${line.slice(0, 60)}`)
    }
    for (const file of table.matchAll(/`(src\/[^`]+\.ts)`/g)) {
      assert.ok(existsSync(join(REPO_ROOT, file[1] as string)), `${file[1]} exists`)
    }
  })
})
