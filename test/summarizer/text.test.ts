import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { findKeyFacts, keyFactsText } from "../../adapters/summarizer/KeyFacts.ts"
import { joinSections, splitSections } from "../../adapters/summarizer/Sections.ts"
import { rankSentences, splitSentences, summarizeText } from "../../adapters/summarizer/SentenceRank.ts"

describe("sentences", () => {
  it("splits at sentence ends but not after abbreviations, initials or inside wrapped lines", () => {
    const text = "Contoso Ltd. ordered ten filters from Dr. Weber on\nMonday. J. Smith signed it. Was it paid? Yes!\n\nDelivery\nIt shipped."
    expect(splitSentences(text)).toEqual([
      "Contoso Ltd. ordered ten filters from Dr. Weber on Monday.",
      "J. Smith signed it.",
      "Was it paid?",
      "Yes!",
      "Delivery",
      "It shipped."
    ])
  })

  it("joins a word hyphenated across a line break", () => {
    expect(splitSentences("The ware-\nhouse is full.")).toEqual(["The warehouse is full."])
  })

  it("ranks a sentence that shares the text's topic above one that shares nothing", () => {
    const sentences = [
      "The invoice for the water filters is due in April.",
      "Penguins live in the southern hemisphere.",
      "Water filters were delivered with the invoice.",
      "The filters and the invoice arrived together."
    ]
    const scores = rankSentences(sentences)
    expect(scores[1]).toBeCloseTo(0.15)
    for (const i of [0, 2, 3]) expect(scores[i]!).toBeGreaterThan(scores[1]!)
  })

  it("keeps at most five sentences and 1,200 characters, in the text's order, whatever the text", () => {
    fc.assert(
      fc.property(fc.array(fc.lorem({ mode: "sentences", maxCount: 3 }), { maxLength: 60 }), (paragraphs) => {
        const text = paragraphs.join("\n\n")
        const summary = summarizeText(text)
        expect(summary.length).toBeLessThanOrEqual(5)
        expect(summary.join(" ").length).toBeLessThanOrEqual(1_200)
        const sentences = splitSentences(text)
        const positions = summary.map((s) => sentences.indexOf(s))
        expect(positions.every((p) => p >= 0)).toBe(true)
        expect([...positions].sort((a, b) => a - b)).toEqual(positions)
      }),
      { numRuns: 100 }
    )
  })

  it("is empty for a text with no words", () => {
    expect(summarizeText("")).toEqual([])
    expect(summarizeText(" \n\n ")).toEqual([])
  })
})

describe("key facts", () => {
  it("finds dates in the usual forms", () => {
    const facts = findKeyFacts("Due 2026-04-11, sent March 5, 2026, signed 12 March 2026, paid 14.03.2026 and 3/4/26.")
    expect(facts.dates).toEqual(["2026-04-11", "March 5, 2026", "12 March 2026", "14.03.2026", "3/4/26"])
  })

  it("finds amounts with a symbol or a currency code on either side", () => {
    const facts = findKeyFacts("Totals: $1,250.00, € 99,50, EUR 12.90, 300 USD, 1.250,00 EUR and 20 dollars; not 4821.")
    expect(facts.amounts).toEqual(["$1,250.00", "€ 99,50", "EUR 12.90", "300 USD", "1.250,00 EUR", "20 dollars"])
  })

  it("finds references by shape or by the word before them, and emails, without counting them as amounts or names", () => {
    const facts = findKeyFacts("Invoice no. 48213 for order A77-12 (PO-77812) and ticket #5521; write to Ops.Team@example.co.uk.")
    expect(facts.references).toEqual(["48213", "A77-12", "PO-77812", "5521"])
    expect(facts.emails).toEqual(["Ops.Team@example.co.uk"])
    expect(facts.amounts).toEqual([])
    expect(facts.names).toEqual([])
  })

  it("finds names as capitalised sequences, without greetings, months or a shorter form of a longer name", () => {
    const facts = findKeyFacts("Dear Maria Schmidt, Jonas Weber of Northwind Traders GmbH met Northwind Traders on March Fifth. Thank You.")
    expect(facts.names).toEqual(["Maria Schmidt", "Jonas Weber", "Northwind Traders GmbH"])
  })

  it("keeps ten of each kind, once each", () => {
    const text = Array.from({ length: 15 }, (_, i) => `Order ORD-${100 + i} and ORD-${100 + i}.`).join(" ")
    expect(findKeyFacts(text).references).toEqual(Array.from({ length: 10 }, (_, i) => `ORD-${100 + i}`))
  })

  it("writes a line per kind found, or says none were found", () => {
    expect(keyFactsText(findKeyFacts("Pay $5.00 to bob@example.com by 2026-01-02."))).toBe(
      "Dates: 2026-01-02\nAmounts: $5.00\nEmails: bob@example.com"
    )
    expect(keyFactsText(findKeyFacts("nothing here"))).toBe("No dates, amounts, names, emails or references found.")
  })
})

describe("sections", () => {
  it("reads back what joinSections wrote", () => {
    const text = fc.string({ minLength: 1 }).filter((s) => s.trim() !== "" && !/\n\s*(?:#|\*|_)*\s*(?:summary|key[ _-]?facts|description|text)\b/i.test(`\n${s}`))
    fc.assert(
      fc.property(text, text, (a, b) => {
        const sections = [{ key: "summary", text: a.trim() }, { key: "key_facts", text: b.trim() }]
        expect(splitSections(joinSections(sections), "pdf")).toEqual(sections)
      }),
      { numRuns: 200 }
    )
  })

  it("accepts headings in Markdown, bold, with the text on the same line, in any order", () => {
    expect(splitSections("# Text\nHELLO\n# Description\nA sign.", "image")).toEqual([
      { key: "description", text: "A sign." },
      { key: "text", text: "HELLO" }
    ])
    expect(splitSections("**Summary:** A letter.\n**Key facts:** none", "pdf")).toEqual([
      { key: "summary", text: "A letter." },
      { key: "key_facts", text: "none" }
    ])
    expect(splitSections("Summary\nA letter.\nKey_facts\nnone", "pdf")).toHaveLength(2)
  })

  it("is empty when a section is missing, empty or given twice, or the headings are another kind's", () => {
    expect(splitSections("Summary:\nA letter.", "pdf")).toEqual([])
    expect(splitSections("Summary:\n\nKey facts:\nnone", "pdf")).toEqual([])
    expect(splitSections("Summary:\na\nKey facts:\nb\nSummary:\nc", "pdf")).toEqual([])
    expect(splitSections("Description:\na\nText:\nb", "pdf")).toEqual([])
    expect(splitSections("Summary of the meeting was short.\nKey facts are few.", "pdf")).toEqual([])
  })
})
