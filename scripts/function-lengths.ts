// Lists the functions of src/ longer than a limit, longest first: `npx tsx scripts/function-lengths.ts [LINES]`
// (default 60). Counts function declarations, methods, accessors and function or arrow expressions
// bound to a name (a variable, a property), from their first line to their last. A report, not a check.
import { globSync, readFileSync } from 'node:fs'
import ts from 'typescript'

const limit = Number(process.argv[2] ?? 60)

/** The name a function is known by, or undefined for an anonymous one (a callback passed inline). */
function functionName(node: ts.Node): string | undefined {
  if (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isGetAccessor(node) || ts.isSetAccessor(node)) {
    return node.name?.getText()
  }
  if (ts.isConstructorDeclaration(node)) return 'constructor'
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    const parent = node.parent
    if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent)) {
      return parent.name.getText()
    }
  }
  return undefined
}

const rows: { lines: number; name: string; where: string }[] = []
for (const file of globSync('src/**/*.ts')) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
  const visit = (node: ts.Node) => {
    const name = functionName(node)
    if (name !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line + 1
      if (last - first + 1 > limit) rows.push({ lines: last - first + 1, name, where: `${file}:${first}` })
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
}
rows.sort((a, b) => b.lines - a.lines)
for (const row of rows) console.log(`${String(row.lines).padStart(4)}  ${row.name}  ${row.where}`)
