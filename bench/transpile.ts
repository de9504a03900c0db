// The bench's own processes (baseline, reference apps, autocannon runner) as plain JavaScript in a temp dir, so
// they run on bare node: no TypeScript loader in their memory or start-up.
import { readFileSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import ts from 'typescript'

/**
 * Transpiles each `bench/NAME.ts` in `names` to `dir/NAME.js` (ES modules; relative `./x.js` imports keep working
 * among them), and links `dir/node_modules` to the project's, so their package imports resolve. Returns a function
 * that removes the link (call it before deleting `dir`, so nothing ever follows it).
 */
export function transpileBenchFiles(root: string, dir: string, names: string[]): () => void {
  for (const name of names) {
    const source = readFileSync(join(root, 'bench', `${name}.ts`), 'utf8')
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
    })
    writeFileSync(join(dir, `${name}.js`), outputText)
  }
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n')
  const link = join(dir, 'node_modules')
  symlinkSync(join(root, 'node_modules'), link, 'dir')
  return () => unlinkSync(link)
}
