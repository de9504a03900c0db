// Writes the OpenAPI document the service serves (without PUBLIC_URL) to openapi.json, or with
// --check fails if the committed file differs. Usage: tsx scripts/openapi.ts [--check]
import { readFile, writeFile } from 'node:fs/promises'
import { renderOpenApi } from './lib/openapi-document.js'

const path = new URL('../openapi.json', import.meta.url)
const rendered = await renderOpenApi()
if (process.argv.includes('--check')) {
  if ((await readFile(path, 'utf8')) !== rendered) {
    process.stderr.write('openapi.json is out of date: run `npm run openapi` and commit it.\n')
    process.exitCode = 1
  }
} else {
  await writeFile(path, rendered)
}
