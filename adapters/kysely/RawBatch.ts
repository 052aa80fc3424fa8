import { CompiledQuery } from "kysely"
import type { Db } from "./Database.ts"
import type { Dialect } from "./Migrations.ts"

/**
 * Multi-row statements for the webhook engine's hot paths, as SQL text built once per shape and
 * run as a compiled query. Kysely's builder makes a node per value, and for a batch of hundreds of
 * rows building and compiling cost more than the database's work; these statements are fixed, so
 * their text is kept by shape. Every value is still a bound parameter.
 */
export interface RowStatement<Row> {
  /** Runs the statement for `rows` (at most `maxRows` at a time) and returns what it returned. */
  readonly run: <Out = unknown>(db: Db, rows: ReadonlyArray<Row>) => Promise<ReadonlyArray<Out>>
  readonly maxRows: number
}

/**
 * A statement over a VALUES list of `columns.length` parameters per row: `text(values)` wraps the
 * list (e.g. `INSERT INTO t (a, b) VALUES ${values}`); `cast` wraps one placeholder of a column
 * (PostgreSQL types untyped parameters in VALUES as text, so integers need a CAST).
 */
export const rowStatement = <Row>(options: {
  readonly dialect: Dialect
  readonly columns: ReadonlyArray<string>
  readonly values: (row: Row) => ReadonlyArray<unknown>
  readonly text: (values: string) => string
  readonly cast?: Readonly<Record<string, string>>
  readonly maxRows?: number
}): RowStatement<Row> => {
  const texts = new Map<number, string>()
  const textFor = (rows: number): string => {
    let text = texts.get(rows)
    if (text === undefined) {
      const tuples: Array<string> = []
      let n = 0
      for (let r = 0; r < rows; r++) {
        const slots = options.columns.map((column) => {
          n += 1
          const slot = options.dialect === "postgres" ? `$${n}` : "?"
          const type = options.cast?.[column]
          return type === undefined ? slot : `CAST(${slot} AS ${type})`
        })
        tuples.push(`(${slots.join(", ")})`)
      }
      text = options.text(tuples.join(", "))
      // Batches come in a few sizes (full ones and the odd remainder); keep a bounded number.
      if (texts.size >= 64) texts.delete(texts.keys().next().value!)
      texts.set(rows, text)
    }
    return text
  }
  return {
    maxRows: options.maxRows ?? 500,
    run: async <Out>(db: Db, rows: ReadonlyArray<Row>) => {
      const parameters: Array<unknown> = []
      for (const row of rows) for (const value of options.values(row)) parameters.push(value)
      const result = await db.executeQuery<Out>(CompiledQuery.raw(textFor(rows.length), parameters))
      return result.rows
    }
  }
}

/** Runs `statement` over `rows` in chunks it can take, concatenating what each returned. */
export const runInChunks = async <Row, Out = unknown>(
  db: Db,
  statement: RowStatement<Row>,
  rows: ReadonlyArray<Row>
): Promise<Array<Out>> => {
  const out: Array<Out> = []
  for (let i = 0; i < rows.length; i += statement.maxRows) {
    out.push(...await statement.run<Out>(db, rows.slice(i, i + statement.maxRows)))
  }
  return out
}
