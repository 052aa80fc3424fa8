import { CompiledQuery } from "kysely"
import type { Db } from "./Database.ts"
import { statementName } from "./JsonBatch.ts"
import type { Dialect } from "./Migrations.ts"

/**
 * Multi-row statements for the webhook engine's hot paths, as fixed SQL text run as a compiled
 * query. Kysely's builder makes a node per value, and for a batch of hundreds of rows building and
 * compiling cost more than the database's work. Every value is still a bound parameter.
 *
 * - PostgreSQL: one text whatever the batch size, the rows coming as one parameter per column,
 *   zipped by `ROWS FROM`. PostgreSQL then parses and plans a short statement and binds a few
 *   parameters, instead of a VALUES list of thousands. Number columns go as arrays (`unnest`); text
 *   columns as a JSON array of strings (`json_array_elements_text`), which the JSON encoders on both
 *   sides escape far faster than node-postgres quotes each element of an array literal (a delivery's
 *   envelope is hundreds of characters full of quotes).
 * - SQLite: a VALUES list per batch size. better-sqlite3 keeps statements prepared (a bounded
 *   cache), and preparing one of hundreds of rows costs more than running it, so batches go in
 *   power-of-two chunks: nine texts at most, each prepared once.
 */
export interface RowStatement<Row> {
  /** Runs the statement for `rows` (at most `maxRows` at a time) and returns what it returned. */
  readonly run: <Out = unknown>(db: Db, rows: ReadonlyArray<Row>) => Promise<ReadonlyArray<Out>>
  readonly maxRows: number
  /** How many of `remaining` rows the next run takes. */
  readonly chunk: (remaining: number) => number
}

/**
 * A column of whole numbers as PostgreSQL's array literal (`{1,NULL,3}`), written in one join:
 * node-postgres would quote each element and run two regular expressions over it. A column holding
 * anything else is left to node-postgres.
 */
const integerArray = (column: ReadonlyArray<unknown>): string | ReadonlyArray<unknown> => {
  let nulls = false
  for (const value of column) {
    if (value === null || value === undefined) nulls = true
    else if (!Number.isSafeInteger(value)) return column
  }
  return `{${(nulls ? column.map((value) => value ?? "NULL") : column).join(",")}}`
}

/**
 * A statement over rows of `columns.length` values: `text(rows)` places `rows`, a query yielding
 * them in column order (`VALUES …` on SQLite; on PostgreSQL `SELECT * FROM ROWS FROM (…)` over one
 * `unnest` of an array per number column and one `json_array_elements_text` per text column), e.g.
 * `INSERT INTO t (a, b) ${rows}` or `… WHERE id IN (${rows})`. `types` gives PostgreSQL's type of a
 * column (default `text`).
 */
export const rowStatement = <Row>(options: {
  readonly dialect: Dialect
  /** Names the statement on PostgreSQL, which then keeps it prepared (see `statementName`). */
  readonly name: string
  readonly columns: ReadonlyArray<string>
  readonly values: (row: Row) => ReadonlyArray<unknown>
  readonly text: (rows: string) => string
  readonly types?: Readonly<Record<string, "integer" | "bigint">>
  readonly maxRows?: number
}): RowStatement<Row> => {
  const maxRows = options.maxRows ?? 500
  const width = options.columns.length
  if (options.dialect === "postgres") {
    const numeric = options.columns.map((column) => options.types?.[column] !== undefined)
    const text = statementName(options.name) + options.text(
      `SELECT * FROM ROWS FROM (${
        options.columns.map((column, i) =>
          numeric[i] ? `unnest($${i + 1}::${options.types![column]}[])` : `json_array_elements_text($${i + 1}::json)`
        ).join(", ")
      })`
    )
    return {
      maxRows,
      chunk: (remaining) => Math.min(remaining, maxRows),
      run: async <Out>(db: Db, rows: ReadonlyArray<Row>) => {
        const arrays: Array<Array<unknown>> = Array.from({ length: width }, () => new Array(rows.length))
        for (let r = 0; r < rows.length; r++) {
          const values = options.values(rows[r]!)
          for (let c = 0; c < width; c++) arrays[c]![r] = values[c]
        }
        const parameters = arrays.map((column, c) => (numeric[c] ? integerArray(column) : JSON.stringify(column)))
        return (await db.executeQuery<Out>(CompiledQuery.raw(text, parameters))).rows
      }
    }
  }
  const texts = new Map<number, string>()
  const tuple = `(${options.columns.map(() => "?").join(", ")})`
  const textFor = (rows: number): string => {
    let text = texts.get(rows)
    if (text === undefined) {
      text = options.text(`VALUES ${Array.from({ length: rows }, () => tuple).join(", ")}`)
      // `runInChunks` asks for a handful of sizes; a caller asking for others cannot grow this without bound.
      if (texts.size >= 64) texts.delete(texts.keys().next().value!)
      texts.set(rows, text)
    }
    return text
  }
  return {
    maxRows,
    chunk: (remaining) => 2 ** Math.floor(Math.log2(Math.min(remaining, maxRows))),
    run: async <Out>(db: Db, rows: ReadonlyArray<Row>) => {
      const parameters: Array<unknown> = []
      for (const row of rows) for (const value of options.values(row)) parameters.push(value)
      return (await db.executeQuery<Out>(CompiledQuery.raw(textFor(rows.length), parameters))).rows
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
  for (let i = 0; i < rows.length;) {
    const size = statement.chunk(rows.length - i)
    out.push(...await statement.run<Out>(db, rows.slice(i, i + size)))
    i += size
  }
  return out
}
