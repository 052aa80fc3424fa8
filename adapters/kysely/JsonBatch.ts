import { CompiledQuery } from "kysely"
import type { Db } from "./Database.ts"
import type { Dialect } from "./Migrations.ts"

/**
 * Set-based statements of the inbound pipeline's hot paths, with a whole batch in one parameter: a
 * JSON array of row objects, read as a table by `json_to_recordset` (PostgreSQL) or `json_each`
 * (SQLite). One statement text serves every batch size, so each is parsed and planned once and kept
 * prepared (better-sqlite3's statement cache; a named statement on PostgreSQL, see `KyselyStorage`),
 * and the JSON encoders on both sides do the quoting.
 *
 * A statement is written once for both dialects: `${rows}` places the table (aliased `r`, with the
 * given columns), `$n` the other parameters, numbered from 2 (the rows are parameter 1).
 *
 * On SQLite the rows' subquery carries `LIMIT -1` (no limit): a subquery with a LIMIT is never
 * flattened into a join, so SQLite reads the JSON once into a table of its own and looks each row up
 * by key. Flattened, it parsed the whole JSON again for every row the statement touched: an UPDATE
 * of 250 rows took 56 ms instead of under 1.
 */
export interface JsonBatch {
  /** Runs the statement for `rows`, with `extra` as parameters 2, 3, …, and returns its rows. */
  readonly run: <Out = unknown>(db: Db, rows: ReadonlyArray<object>, extra?: ReadonlyArray<unknown>) => Promise<ReadonlyArray<Out>>
  /** The statement's text, as sent (for tests and statement logs). */
  readonly text: string
}

// A lone surrogate half (text from outside can hold one) goes as U+FFFD, as the drivers send a text
// parameter: JSON would escape it as `\ud800`, which PostgreSQL's JSON refuses and SQLite's keeps.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g
const wellFormed = (_key: string, value: unknown) => (typeof value === "string" ? value.replace(LONE_SURROGATE, "\uFFFD") : value)

/** The rows as one JSON text; the replacer (which costs) only when a surrogate escape is in the text. */
const rowsAsJson = (rows: ReadonlyArray<object>): string => {
  const text = JSON.stringify(rows)
  return /\\ud[89a-f]/i.test(text) ? JSON.stringify(rows, wellFormed) : text
}

/** A column of a batch's rows and its PostgreSQL type (`text` unless given). */
export type BatchColumn = string | readonly [name: string, type: "text" | "integer" | "bigint" | "boolean"]

/** Names every statement of the batch forms, so PostgreSQL keeps each prepared under one name per connection. */
const NAME_PREFIX = "/* omni:"

/**
 * A statement over a batch of rows with `columns`: `template(rows, keyIn)` returns the SQL with
 * `rows` in place of the rows' table, and `keyIn(column, rowColumn)` for "`column` is one of the
 * rows' `rowColumn` values" (`rowColumn` defaults to `column`). Hot statements name the key they
 * look rows up by with `keyIn` even where they join on it: PostgreSQL then reads the table through
 * that column's index whatever its statistics say (`= ANY(ARRAY(…))`, see `amongKeys` in
 * Connection.ts), where a join alone may be planned as a scan of the whole table. `name` (letters,
 * digits, dashes) names the prepared statement.
 */
export const jsonBatch = (options: {
  readonly dialect: Dialect
  readonly name: string
  /**
   * `false`: never kept prepared on PostgreSQL, so planned at each run for the values given (a
   * statement whose generic plan, made on a nearly empty table, would walk many rows: see
   * `plan_cache_mode` in KyselyStorage). Its text still names it, for statement logs.
   */
  readonly prepared?: boolean
  readonly columns: ReadonlyArray<BatchColumn>
  readonly template: (rows: string, keyIn: (column: string, rowColumn?: string) => string) => string
}): JsonBatch => {
  const columns = options.columns.map((column) => (typeof column === "string" ? [column, "text"] as const : column))
  const typeOf = new Map(columns)
  const postgres = options.dialect === "postgres"
  const rows = postgres
    ? `json_to_recordset($1::json) AS r(${columns.map(([name, type]) => `${name} ${type}`).join(", ")})`
    : `(SELECT ${columns.map(([name]) => `json_extract(value, '$.${name}') AS ${name}`).join(", ")} FROM json_each($1) LIMIT -1) AS r`
  const keyIn = (column: string, rowColumn = column.replace(/^.*\./, "")) =>
    postgres
      ? `${column} = ANY(ARRAY(SELECT k.${rowColumn} FROM json_to_recordset($1::json) AS k(${rowColumn} ${typeOf.get(rowColumn) ?? "text"})))`
      : `${column} IN (SELECT json_extract(value, '$.${rowColumn}') FROM json_each($1))`
  const written = `${options.prepared === false ? `/* omni-unprepared:${options.name} */ ` : statementName(options.name)}${options.template(rows, keyIn)}`
  // better-sqlite3 binds only `?` by position: each `$n` becomes `?`, its value placed where it appears.
  const order = options.dialect === "postgres" ? undefined : Array.from(written.matchAll(/\$(\d+)/g), (m) => Number(m[1]) - 1)
  const text = order === undefined ? written : written.replace(/\$\d+/g, "?")
  return {
    text,
    run: async <Out>(db: Db, batch: ReadonlyArray<object>, extra: ReadonlyArray<unknown> = []) => {
      if (batch.length === 0) return []
      const parameters = [rowsAsJson(batch), ...extra]
      const bound = order === undefined ? parameters : order.map((i) => parameters[i])
      return (await db.executeQuery<Out>(CompiledQuery.raw(text, bound))).rows
    }
  }
}

/**
 * `column`, compared as a filter of the rows the batch's keys reach, never the index a statement
 * walks. Without statistics (SQLite keeps none; PostgreSQL's lag behind a tenant that grew) the
 * planners walk every row of the tenant through a `tenant_id` index and match the batch against each:
 * moving 100 messages of a tenant holding 20,000 took 5 s on SQLite. As an expression the column
 * matches no index, so both go from the batch's keys through the primary key.
 */
export const filterOnly = (column: string): string => `(${column} || '')`

/**
 * The comment that names a statement written elsewhere (`name`: letters, digits, dashes), placed
 * first in its text: on PostgreSQL it is then kept prepared like the batch statements. Only for a text
 * that never changes between runs.
 */
export const statementName = (name: string): string => `${NAME_PREFIX}${name} */ `

/** The prepared-statement name of a batch statement's text, or undefined for any other text. */
export const batchStatementName = (text: string): string | undefined => {
  if (!text.startsWith(NAME_PREFIX)) return undefined
  const end = text.indexOf(" */", NAME_PREFIX.length)
  return end < 0 ? undefined : `omni_${text.slice(NAME_PREFIX.length, end)}`
}
