// Writes the configuration table (scripts/configuration-table.ts, from src/config.ts) into the
// README, between its `configuration` markers. Usage: `npm run config-doc` after changing a
// variable in src/config.ts; a test fails until the README matches.
import { readFile, writeFile } from 'node:fs/promises'
import { renderConfigurationTable } from './configuration-table.js'
import { replaceBlock } from './doc-block.js'

const path = new URL('../README.md', import.meta.url)
await writeFile(path, replaceBlock(await readFile(path, 'utf8'), 'configuration', renderConfigurationTable()))
