// A statement Kysely compiled once (pet-sql.ts) as plain data, its SQL text and where each
// execution's values go, and the binding of those values; free of Kysely, so the SQLite writer
// thread can take the text through workerData (structured clone) and run it without the builder.

/** Where one placeholder's value comes from: a named value of the execution, or a fixed value. */
type StatementParameter = { readonly slot: string } | { readonly value: unknown }

/** A compiled statement as plain, structured-clone-safe data: SQL text and parameters in placeholder order. */
export interface StatementText {
  readonly sql: string
  readonly parameters: readonly StatementParameter[]
}

/**
 * A statement compiled once: its SQL text and the values of one execution in placeholder order.
 * `N` names the values it takes (`bind({ limit: 21 })`); a value not given binds as NULL (an optional
 * NewPet member the request left out).
 */
export interface CompiledStatement<N extends string> extends StatementText {
  bind(values: { readonly [K in N]?: unknown }): unknown[]
}

/** The statement of `text`, with its `bind`; `N` must name the slots `text` holds (pet-sql.ts keeps them in step). */
export function compiledStatement<N extends string>(text: StatementText): CompiledStatement<N> {
  const { sql, parameters } = text
  return {
    sql,
    parameters,
    bind: (values) =>
      parameters.map((parameter) => ('slot' in parameter ? (values[parameter.slot as N] ?? null) : parameter.value)),
  }
}

/** `statement` without its `bind`: the plain data a worker thread can receive. */
export function statementText(statement: StatementText): StatementText {
  return { sql: statement.sql, parameters: statement.parameters }
}
