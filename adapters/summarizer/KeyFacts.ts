/**
 * Key facts found in a text by pattern: dates, money amounts, names (capitalised word sequences),
 * email addresses and references (invoice, order and similar numbers). Each kind keeps its first
 * ten distinct values in the order they appear.
 */

/** What was found, each list in order of first appearance. */
export interface KeyFacts {
  readonly dates: ReadonlyArray<string>
  readonly amounts: ReadonlyArray<string>
  readonly names: ReadonlyArray<string>
  readonly emails: ReadonlyArray<string>
  readonly references: ReadonlyArray<string>
}

const MAX_PER_KIND = 10

const MONTH = "(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"

const DATE_PATTERNS: ReadonlyArray<RegExp> = [
  // 2026-03-12, 2026/03/12
  /\b(?:19|20)\d{2}[-/](?:0?[1-9]|1[0-2])[-/](?:0?[1-9]|[12]\d|3[01])\b/g,
  // 12 March 2026, 12. März is not covered: English month names only
  new RegExp(`\\b(?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?\\.? ${MONTH}\\.?,? (?:19|20)\\d{2}\\b`, "g"),
  // March 12, 2026
  new RegExp(`\\b${MONTH}\\.? (?:0?[1-9]|[12]\\d|3[01])(?:st|nd|rd|th)?,? (?:19|20)\\d{2}\\b`, "g"),
  // 12/03/2026, 12.03.2026, 3/12/26
  /\b(?:0?[1-9]|[12]\d|3[01])[./](?:0?[1-9]|[12]\d|3[01])[./](?:(?:19|20)\d{2}|\d{2})\b/g
]

const CURRENCY_CODES = "USD|EUR|GBP|CHF|JPY|CAD|AUD|NZD|SEK|NOK|DKK|PLN|CZK|INR|CNY|BRL|MXN|ZAR"
const NUMBER = "\\d{1,3}(?:[,.\\u00a0 ]\\d{3})*(?:[.,]\\d{1,2})?|\\d+(?:[.,]\\d{1,2})?"
const AMOUNT_PATTERNS: ReadonlyArray<RegExp> = [
  // $85.50, € 1.250,00, EUR 1,250.00
  new RegExp(`(?:[$€£¥₹]|\\b(?:${CURRENCY_CODES})\\b) ?(?:${NUMBER})`, "gu"),
  // 1,250.00 EUR, 99.50 €, 20 dollars
  new RegExp(`\\b(?:${NUMBER}) ?(?:[€£¥₹]|(?:${CURRENCY_CODES}|euros?|dollars?|pounds?)\\b)`, "giu")
]

const EMAIL = /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/gu

const REFERENCE_PATTERNS: ReadonlyArray<RegExp> = [
  // INV-2026-0042, PO-77812, TRK-558201: a capital prefix and digits, joined by - / or #
  /\b[A-Z]{2,6}[-/#]\d[\dA-Z]*(?:[-/][\dA-Z]+)*\b/g,
  // "invoice no. 4821", "order number: A77-12", "Ref: 99812"
  /\b(?:invoice|order|reference|ref|booking|ticket|case|contract|account|customer|policy|tracking|shipment|PO)\s*(?:no\.?|number|nr\.?|num\.?|#|id)?\s*[:#]?\s*([A-Z0-9][A-Z0-9/-]*\d[A-Z0-9/-]*)\b/gi
]

// Capitalised words that open sentences or salutations rather than name anyone.
const NOT_NAME_WORDS = new Set(
  ("The This That These Those There Their They Then Than When Where What Which While Who Why How Dear Hello Hi Thank " +
    "Thanks Please Kind Best Regards Yours Sincerely Our Your We You It Its If In On At By For From To Of And Or But As " +
    "An A All Any Each Every No Not Our Some Such Total Subtotal Amount Due Date Page Invoice Order Reference Ref Payment " +
    "Questions Terms Delivery Revenue During Late Replacement Freight Inventory Section Report Quarterly Telephone Phone " +
    "Email Tel Fax Re Subject Note Notice Account Manager Customer Dear Mr Mrs Ms Dr Prof Monday Tuesday Wednesday " +
    "Thursday Friday Saturday Sunday January February March April May June July August September October November " +
    "December Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec Ignore Then Send Visit Tell Reveal")
    .split(" ")
)

const NAME_WORD = "\\p{Lu}[\\p{Ll}'’]+(?:-\\p{Lu}[\\p{Ll}]+)?(?:\\p{Lu}[\\p{Ll}]*)?"
const NAME_SEQUENCE = new RegExp(`(?<![\\p{L}\\p{N}@.-])${NAME_WORD}(?:[ \\t]+${NAME_WORD}){1,3}(?![\\p{L}\\p{N}@-])`, "gu")

const collect = (found: Array<{ value: string; at: number }>): Array<string> => {
  const seen = new Set<string>()
  const out: Array<string> = []
  for (const { value } of found.sort((a, b) => a.at - b.at)) {
    const key = value.toLowerCase()
    if (seen.has(key)) continue
    seen.add(key)
    out.push(value)
    if (out.length >= MAX_PER_KIND) break
  }
  return out
}

// Matches of several patterns, a later pattern's match dropped where an earlier one already covers it.
const matchAll = (text: string, patterns: ReadonlyArray<RegExp>, group = 0): Array<{ value: string; at: number; end: number }> => {
  const found: Array<{ value: string; at: number; end: number }> = []
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) {
      const value = (match[group] ?? match[0]).trim()
      const at = match.index + match[0].indexOf(value)
      const end = at + value.length
      if (found.some((other) => at < other.end && end > other.at)) continue
      found.push({ value, at, end })
    }
  }
  return found
}

const names = (text: string, taken: ReadonlyArray<{ at: number; end: number }>): Array<{ value: string; at: number }> => {
  const found: Array<{ value: string; at: number }> = []
  for (const match of text.matchAll(NAME_SEQUENCE)) {
    let words = match[0].split(/[ \t]+/)
    let at = match.index
    // Leading words such as "Dear" or "Invoice" are dropped; a name needs two words left.
    while (words.length > 0 && NOT_NAME_WORDS.has(words[0]!)) {
      at += words[0]!.length + 1
      words = words.slice(1)
    }
    while (words.length > 0 && NOT_NAME_WORDS.has(words[words.length - 1]!)) words = words.slice(0, -1)
    if (words.length < 2 || words.some((word) => NOT_NAME_WORDS.has(word))) continue
    const value = words.join(" ")
    const end = at + value.length
    if (taken.some((other) => at < other.end && end > other.at)) continue
    found.push({ value, at })
  }
  return found
}

// "Northwind Traders" says nothing "Northwind Traders GmbH" did not.
const withoutParts = (values: ReadonlyArray<string>): Array<string> =>
  values.filter((value) => !values.some((other) => other !== value && ` ${other} `.includes(` ${value} `)))

/** The dates, amounts, names, emails and references in `text`. */
export const findKeyFacts = (text: string): KeyFacts => {
  const flat = text.replace(/\s+/g, " ")
  const emails = matchAll(flat, [EMAIL])
  const dates = matchAll(flat, DATE_PATTERNS)
  const references = matchAll(flat, REFERENCE_PATTERNS, 1)
    .filter(({ value, at, end }) =>
      /\d/.test(value) && !emails.some((e) => at < e.end && end > e.at) && !dates.some((d) => at < d.end && end > d.at)
    )
  const amounts = matchAll(flat, AMOUNT_PATTERNS)
    .filter(({ at, end }) => !references.some((r) => at < r.end && end > r.at))
  return {
    dates: collect(dates),
    amounts: collect(amounts),
    names: withoutParts(collect(names(flat, [...emails, ...references]))),
    emails: collect(emails),
    references: collect(references)
  }
}

/** The facts as the `key_facts` section writes them: a line per kind found, values joined by `; `. */
export const keyFactsText = (facts: KeyFacts): string => {
  const lines = ([
    ["Dates", facts.dates],
    ["Amounts", facts.amounts],
    ["Names", facts.names],
    ["Emails", facts.emails],
    ["References", facts.references]
  ] as const)
    .filter(([, values]) => values.length > 0)
    .map(([label, values]) => `${label}: ${values.join("; ")}`)
  return lines.length > 0 ? lines.join("\n") : "No dates, amounts, names, emails or references found."
}
