// Writes the production dependency tree (scripts/dependency-tree.ts) into docs/security.md, between
// its `dependencies` markers. Usage: `npm run deps-doc` after any dependency change; a test fails
// until the committed list matches what `npm ls` reports.
import { readFile, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { readProductionTree, renderDependencyTree } from './dependency-tree.js'
import { replaceBlock } from './doc-block.js'

const root = fileURLToPath(new URL('..', import.meta.url))
const path = new URL('../docs/security.md', import.meta.url)
const tree = renderDependencyTree(await readProductionTree(root))
await writeFile(path, replaceBlock(await readFile(path, 'utf8'), 'dependencies', tree))
