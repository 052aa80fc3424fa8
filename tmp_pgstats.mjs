import { createRequire } from "node:module"
import { writeFileSync } from "node:fs"
const require = createRequire(import.meta.url)
const pg = require("pg")
const stats = new Map()
const orig = pg.Client.prototype.query
pg.Client.prototype.query = function (config, values, cb) {
  const text = typeof config === "string" ? config : config?.text
  const t = process.hrtime.bigint()
  const result = orig.call(this, config, values, cb)
  if (result && typeof result.then === "function" && text) {
    const client = this
    result.then((r) => {
      const e = stats.get(text) ?? { n: 0, ms: 0, rows: 0, plan: "" }
      if (e.n === 200 && !client._explaining && /conversations/.test(text)) {
        const vals = config?.values ?? values ?? []
        const lit = (v) => v === null || v === undefined ? "NULL" : "'" + String(v).replace(/'/g, "''") + "'"
        const q = config?.name ? { text: `EXPLAIN EXECUTE "${config.name}"(${vals.map(lit).join(", ")})` } : { text: "EXPLAIN " + text, values: vals }
        orig.call(client, q).then((p) => { e.plan = p.rows.map((x) => x["QUERY PLAN"]).join(" / ") }, (err) => { e.plan = "ERR " + err.message })
      }
      e.n++; e.ms += Number(process.hrtime.bigint() - t) / 1e6; e.rows += r?.rowCount ?? 0
      stats.set(text, e)
    }, () => {})
  }
  return result
}
process.on("exit", () => {
  const top = [...stats.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 20)
  if (top.length === 0) return
  writeFileSync(`/tmp/pgstats-${process.pid}.txt`, top.map(([sql, e]) => `${e.ms.toFixed(0)} ms  n=${e.n} rows=${e.rows}  ${sql.replace(/\s+/g, " ").slice(0, 120)}\n   PLAN ${e.plan ?? ""}`).join("\n"))
})
