/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests that read a
 * scrape the way Prometheus would: `# HELP` and `# TYPE` lines, then samples
 * `name{label="value",…} value [timestamp]`, label values with `\\`, `\"` and `\n` escapes. It throws
 * on anything Prometheus would refuse, and checks that histograms are whole (cumulative buckets
 * ending in `+Inf`, which equals `_count`).
 */

/** One sample line. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** A metric family: its declared type, help text and samples. */
export interface Family {
  readonly name: string
  readonly type: "counter" | "gauge" | "histogram" | "summary" | "untyped"
  readonly help: string | undefined
  readonly samples: Array<Sample>
}

/** A parsed scrape. */
export interface Scrape {
  readonly families: ReadonlyMap<string, Family>
  /** The value of the one sample named `name` whose labels are exactly `labels`; 0 when there is none. */
  readonly value: (name: string, labels?: Readonly<Record<string, string>>) => number
  /** The sum of the samples named `name` whose labels include `match`. */
  readonly sum: (name: string, match?: Readonly<Record<string, string>>) => number
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"])

const parseValue = (raw: string, line: string): number => {
  if (raw === "+Inf") return Number.POSITIVE_INFINITY
  if (raw === "-Inf") return Number.NEGATIVE_INFINITY
  if (raw === "NaN") return Number.NaN
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`not a number: ${JSON.stringify(raw)} in ${line}`)
  return Number(raw)
}

/** Reads `{a="x",b="y"}` from `text` at `start` (the `{`); returns the labels and the index after `}`. */
const parseLabels = (text: string, start: number, line: string) => {
  const labels: Record<string, string> = {}
  let i = start + 1
  for (;;) {
    if (text[i] === "}") return { labels, end: i + 1 }
    const eq = text.indexOf("=", i)
    if (eq < 0) throw new Error(`bad labels in ${line}`)
    const name = text.slice(i, eq).trim()
    if (!LABEL.test(name)) throw new Error(`bad label name ${JSON.stringify(name)} in ${line}`)
    if (name in labels) throw new Error(`label ${name} twice in ${line}`)
    if (text[eq + 1] !== "\"") throw new Error(`label value not quoted in ${line}`)
    let value = ""
    let j = eq + 2
    for (;; j++) {
      const c = text[j]
      if (c === undefined) throw new Error(`unterminated label value in ${line}`)
      if (c === "\"") break
      if (c === "\\") {
        const next = text[++j]
        if (next === "n") value += "\n"
        else if (next === "\\" || next === "\"") value += next
        else throw new Error(`bad escape \\${next} in ${line}`)
      } else value += c
    }
    labels[name] = value
    i = j + 1
    if (text[i] === ",") i++
    else if (text[i] !== "}") throw new Error(`expected , or } after a label in ${line}`)
  }
}

const matches = (labels: Readonly<Record<string, string>>, match: Readonly<Record<string, string>>) =>
  Object.entries(match).every(([key, value]) => labels[key] === value)

const sameLabels = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>) =>
  Object.keys(a).length === Object.keys(b).length && matches(a, b)

/** The family a sample name belongs to: itself, or a histogram's or summary's `_bucket`/`_sum`/`_count`. */
const familyOf = (families: Map<string, Family>, name: string): Family | undefined => {
  const own = families.get(name)
  if (own !== undefined) return own
  const suffix = /^(.*)_(bucket|sum|count)$/.exec(name)
  if (suffix === null) return undefined
  const base = families.get(suffix[1]!)
  if (base === undefined) return undefined
  if (base.type === "histogram" || (base.type === "summary" && suffix[2] !== "bucket")) return base
  return undefined
}

/** Checks a histogram family: per label set, buckets cumulative in `le` order, `+Inf` present and equal to `_count`. */
const checkHistogram = (family: Family) => {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number; sum?: number }>()
  for (const sample of family.samples) {
    const { le, ...rest } = sample.labels
    const key = JSON.stringify(Object.entries(rest).sort())
    const entry = series.get(key) ?? { buckets: [] }
    series.set(key, entry)
    if (sample.name === `${family.name}_bucket`) {
      if (le === undefined) throw new Error(`${family.name}_bucket without le`)
      entry.buckets.push([parseValue(le, `le of ${family.name}`), sample.value])
    } else if (sample.name === `${family.name}_count`) entry.count = sample.value
    else if (sample.name === `${family.name}_sum`) entry.sum = sample.value
    else throw new Error(`histogram ${family.name} has a plain sample`)
  }
  for (const { buckets, count, sum } of series.values()) {
    if (count === undefined || sum === undefined) throw new Error(`histogram ${family.name} lacks _count or _sum`)
    const last = buckets.at(-1)
    if (last === undefined || last[0] !== Number.POSITIVE_INFINITY) throw new Error(`histogram ${family.name} lacks le="+Inf" last`)
    if (last[1] !== count) throw new Error(`histogram ${family.name}: +Inf bucket ${last[1]} is not _count ${count}`)
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i]![0] > buckets[i - 1]![0])) throw new Error(`histogram ${family.name}: le not increasing`)
      if (buckets[i]![1] < buckets[i - 1]![1]) throw new Error(`histogram ${family.name}: buckets not cumulative`)
    }
  }
}

/** Parses a scrape; throws on a malformed line, a sample of an undeclared family, or a broken histogram. */
export const parsePrometheusText = (text: string): Scrape => {
  const families = new Map<string, Family>()
  const helps = new Map<string, string>()
  if (text !== "" && !text.endsWith("\n")) throw new Error("the exposition does not end with a newline")
  for (const line of text.split("\n")) {
    if (line === "") continue
    if (line.startsWith("#")) {
      const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
      if (meta === null) continue // a comment
      const [, kind, name, rest] = meta
      if (!NAME.test(name!)) throw new Error(`bad metric name in ${line}`)
      if (kind === "HELP") {
        helps.set(name!, rest!.replace(/\\n/g, "\n").replace(/\\\\/g, "\\"))
      } else {
        if (!TYPES.has(rest!)) throw new Error(`unknown type in ${line}`)
        if (families.has(name!)) throw new Error(`TYPE of ${name} twice`)
        families.set(name!, { name: name!, type: rest as Family["type"], help: undefined, samples: [] })
      }
      continue
    }
    const nameEnd = line.search(/[{ ]/)
    if (nameEnd <= 0) throw new Error(`bad sample line ${line}`)
    const name = line.slice(0, nameEnd)
    if (!NAME.test(name)) throw new Error(`bad metric name in ${line}`)
    let labels: Record<string, string> = {}
    let rest = line.slice(nameEnd)
    if (rest.startsWith("{")) {
      const parsed = parseLabels(line, nameEnd, line)
      labels = parsed.labels
      rest = line.slice(parsed.end)
    }
    const fields = rest.trim().split(/\s+/)
    if (fields.length < 1 || fields.length > 2) throw new Error(`bad value in ${line}`)
    const family = familyOf(families, name)
    if (family === undefined) throw new Error(`sample ${name} of no declared family`)
    if (family.samples.some((s) => s.name === name && sameLabels(s.labels, labels))) throw new Error(`duplicate series in ${line}`)
    family.samples.push({ name, labels, value: parseValue(fields[0]!, line) })
  }
  const withHelp = new Map<string, Family>()
  for (const [name, family] of families) {
    if (family.type === "histogram") checkHistogram(family)
    withHelp.set(name, { ...family, help: helps.get(name) })
  }
  const samplesNamed = (name: string) => (familyOf(families, name)?.samples ?? []).filter((s) => s.name === name)
  return {
    families: withHelp,
    value: (name, labels = {}) => samplesNamed(name).find((s) => sameLabels(s.labels, labels))?.value ?? 0,
    sum: (name, match = {}) => samplesNamed(name).filter((s) => matches(s.labels, match)).reduce((a, s) => a + s.value, 0)
  }
}
