// The production dependency tree as docs/security.md lists it: read from `npm ls --omit=dev --all
// --json` (what is installed from package-lock.json), rendered as an indented list with versions.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

/** A package in `npm ls --json` output (only the fields used here). */
interface NpmLsNode {
  version?: string
  extraneous?: boolean
  dependencies?: Record<string, NpmLsNode>
}

/**
 * The JSON of `npm ls --omit=dev --all --json` run in `cwd`. npm exits non-zero when the tree has
 * problems (an extraneous package, say) but still prints the tree, which is what is wanted here.
 */
export async function readProductionTree(cwd: string): Promise<NpmLsNode> {
  const run = promisify(execFile)
  const output = await run('npm', ['ls', '--omit=dev', '--all', '--json'], { cwd, maxBuffer: 16 * 1024 * 1024 }).catch(
    (error: { stdout?: string }) => {
      if (!error.stdout) throw error
      return { stdout: error.stdout }
    },
  )
  return JSON.parse(output.stdout) as NpmLsNode
}

/**
 * The tree as Markdown: a fenced block, one `name@version` per line, two spaces of indent per level,
 * packages in name order; a package npm shows `deduped` (installed once, listed elsewhere with its
 * own dependencies) appears with its version and no children, as npm lists it. Packages npm marks
 * extraneous (in node_modules but not in the lock file) are left out.
 */
export function renderDependencyTree(root: NpmLsNode): string {
  const lines: string[] = []
  const walk = (node: NpmLsNode, depth: number) => {
    for (const name of Object.keys(node.dependencies ?? {}).sort()) {
      const child = node.dependencies?.[name]
      if (!child || child.extraneous) continue
      lines.push(`${'  '.repeat(depth)}${name}@${child.version ?? '(missing)'}`)
      walk(child, depth + 1)
    }
  }
  walk(root, 0)
  return `\`\`\`text\n${lines.join('\n')}\n\`\`\`\n`
}
