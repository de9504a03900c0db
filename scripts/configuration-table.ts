// The README's configuration table, rendered from CONFIGURATION_VARIABLES, which src/config.ts
// derives from VARIABLES (the one declaration of every variable's name, default, bounds and meaning).
import { CONFIGURATION_VARIABLES } from '../src/config.js'

/** A default as a table cell: `(none)` and already formatted values as they are, others as code. */
function defaultCell(value: string): string {
  return value === '(none)' || value.startsWith('`') ? value : `\`${value}\``
}

/** The Markdown table (header, separator, one row per variable), ending with a line break. */
export function renderConfigurationTable(): string {
  const rows = CONFIGURATION_VARIABLES.map((variable) => {
    const name = variable.file ? `\`${variable.name}\` or \`${variable.name}_FILE\`` : `\`${variable.name}\``
    return `| ${name} | ${defaultCell(variable.default)} | ${variable.meaning.replaceAll('|', '\\|')} |`
  })
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows, ''].join('\n')
}
