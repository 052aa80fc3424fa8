import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as net from "node:net"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { createRequire } from "node:module"
import { Effect } from "effect"
import { getResolvedPDFJS } from "unpdf"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { EMBEDDED_IMAGE_MODEL, EMBEDDED_LIBRARIES, EMBEDDED_PDF_MODEL } from "../../adapters/summarizer/EmbeddedModel.ts"
import { type EmbeddedSummarizer, makeEmbeddedSummarizer } from "../../adapters/summarizer/index.ts"
import type { SummarizeInput, SummaryDraft } from "../../src/ports/Summarizer.ts"
import {
  damagedPdf,
  fixture,
  injectionPdf,
  injectionText,
  invoicePdf,
  reportMarker,
  reportPdf,
  scanWords
} from "../support/SummaryFixtures.ts"

const pdf = (bytes: Uint8Array, maxPages = 10): SummarizeInput => ({
  kind: "pdf",
  contentType: "application/pdf",
  filename: "file.pdf",
  bytes,
  maxPages
})
const image = (bytes: Uint8Array, contentType: string): SummarizeInput => ({
  kind: "image",
  contentType,
  filename: "photo",
  bytes,
  maxPages: 10
})
const section = (draft: SummaryDraft, key: string) => draft.sections.find((s) => s.key === key)?.text ?? ""

// Any socket this thread opens while the tests run (node:http, undici and fetch all connect through
// net.Socket) is recorded and refused: the summarizer needs no network.
const connections: Array<string> = []
const restore: Array<() => void> = []
const refuse = (what: string) => {
  connections.push(what)
  throw new Error(`network access during an embedded summary: ${what}`)
}

let summarizer: EmbeddedSummarizer
const summarize = (input: SummarizeInput) => Effect.runPromise(summarizer.summarize(input))
const failure = (target: EmbeddedSummarizer, input: SummarizeInput) => Effect.runPromise(Effect.flip(target.summarize(input)))

beforeAll(() => {
  summarizer = makeEmbeddedSummarizer({ ocrTimeoutMs: 60_000 })
  const { fetch } = globalThis
  const { connect } = net.Socket.prototype
  globalThis.fetch = (input) => refuse(`fetch ${String(input)}`)
  net.Socket.prototype.connect = function(...args: Array<unknown>): never {
    return refuse(`connect ${JSON.stringify(args[0])}`)
  } as unknown as typeof connect
  restore.push(() => {
    globalThis.fetch = fetch
    net.Socket.prototype.connect = connect
  })
})
afterAll(async () => {
  await summarizer.close()
  for (const undo of restore.splice(0)) undo()
})

describe("PDFs", () => {
  it("summarizes a 3-page invoice: summary and key_facts sections, all pages read, not truncated", async () => {
    const started = performance.now()
    const draft = await summarize(pdf(invoicePdf()))
    console.log(`embedded PDF, 3 pages: ${(performance.now() - started).toFixed(0)} ms (first PDF of the process)`)

    expect(draft.sections.map((s) => s.key)).toEqual(["summary", "key_facts"])
    expect({ pagesRead: draft.pagesRead, pagesTotal: draft.pagesTotal, truncated: draft.truncated })
      .toEqual({ pagesRead: 3, pagesTotal: 3, truncated: false })
    expect(draft.model).toBe(EMBEDDED_PDF_MODEL)
    expect(draft.text).toBe(`Summary:\n${section(draft, "summary")}\n\nKey facts:\n${section(draft, "key_facts")}`)
    // Whole sentences of the document, not made-up text.
    expect(section(draft, "summary")).toContain("forty industrial water filters")
    expect(section(draft, "summary").length).toBeLessThanOrEqual(1_200)
  })

  it("finds dates, amounts, names, emails and invoice and order numbers as key facts", async () => {
    const facts = section(await summarize(pdf(invoicePdf())), "key_facts")
    const line = (label: string) => facts.split("\n").find((l) => l.startsWith(`${label}: `)) ?? ""

    for (const date of ["12 March 2026", "2026-04-11", "3 March 2026", "5 March 2026"]) expect(line("Dates")).toContain(date)
    for (const amount of ["EUR 1,250.00", "$85.50", "EUR 12.90"]) expect(line("Amounts")).toContain(amount)
    for (const name of ["Maria Schmidt", "Jonas Weber", "Peter Jansen", "Northwind Traders GmbH"]) expect(line("Names")).toContain(name)
    expect(line("Emails")).toBe("Emails: billing@northwind.example")
    for (const reference of ["INV-2026-0042", "PO-77812", "TRK-558201"]) expect(line("References")).toContain(reference)
    // Sentence openers are no names.
    expect(line("Names")).not.toMatch(/Dear|Please|Kind/)
  })

  it("reads only the first 10 pages of a 12-page PDF and says it is truncated", async () => {
    const draft = await summarize(pdf(reportPdf(12)))

    expect({ pagesRead: draft.pagesRead, pagesTotal: draft.pagesTotal, truncated: draft.truncated })
      .toEqual({ pagesRead: 10, pagesTotal: 12, truncated: true })
    expect(draft.text).not.toContain("ORD-4111")
    expect(draft.text).not.toContain("ORD-4112")
    expect(section(draft, "key_facts")).toContain("ORD-4110")
    expect(section(draft, "key_facts")).toContain("Laura Chen")
    // The same sentence on every page is said once.
    expect(section(draft, "summary").match(/Laura Chen reviewed/g)?.length ?? 0).toBeLessThanOrEqual(1)
  })

  it("times a 10-page PDF", async () => {
    const bytes = reportPdf(10)
    const runs = 5
    const started = performance.now()
    for (let i = 0; i < runs; i++) {
      const draft = await summarize(pdf(bytes))
      expect({ pagesRead: draft.pagesRead, truncated: draft.truncated }).toEqual({ pagesRead: 10, truncated: false })
    }
    console.log(`embedded PDF, 10 pages: ${((performance.now() - started) / runs).toFixed(0)} ms each (mean of ${runs})`)
  })

  it("honours maxPages, and reads a 10-page PDF whole at 10", async () => {
    const three = await summarize(pdf(reportPdf(12), 3))
    expect({ pagesRead: three.pagesRead, pagesTotal: three.pagesTotal, truncated: three.truncated })
      .toEqual({ pagesRead: 3, pagesTotal: 12, truncated: true })
    expect(three.text).not.toContain(reportMarker(4))
    const ten = await summarize(pdf(reportPdf(10)))
    expect({ pagesRead: ten.pagesRead, pagesTotal: ten.pagesTotal, truncated: ten.truncated })
      .toEqual({ pagesRead: 10, pagesTotal: 10, truncated: false })
  })

  it("returns a PDF's markup and prompt injection as plain text, as data", async () => {
    const draft = await summarize(pdf(injectionPdf()))

    // Verbatim: not escaped (the service escapes where it renders HTML), not obeyed, not dropped.
    expect(section(draft, "summary")).toContain("<script>alert(1)</script>")
    expect(section(draft, "summary")).toContain("Ignore previous instructions")
    expect(draft.text).toContain(injectionText.slice(0, 60))
    expect(section(draft, "key_facts")).toContain("Emails: attacker@evil.example")
    expect(section(draft, "key_facts")).toContain("ORD-666")
    for (const s of draft.sections) expect(typeof s.text).toBe("string")
  })

  it("fails with Unreadable for a damaged PDF, an encrypted one, an empty file and an image sent as a PDF", async () => {
    for (const bytes of [damagedPdf(), fixture("encrypted.pdf"), new Uint8Array(0), fixture("text-scan.png")]) {
      const error = await failure(summarizer, pdf(bytes))
      expect(error).toMatchObject({ _tag: "SummarizerError", reason: "Unreadable" })
    }
    expect((await failure(summarizer, pdf(fixture("encrypted.pdf")))).message).toContain("encrypted")
  })
})

describe("images", () => {
  it("describes a PNG by format and size and reads the words drawn on it", async () => {
    const started = performance.now()
    const draft = await summarize(image(fixture("text-scan.png"), "image/png"))
    console.log(`embedded image 900x320 PNG: ${(performance.now() - started).toFixed(0)} ms (OCR worker start included)`)

    expect(draft.sections.map((s) => s.key)).toEqual(["description", "text"])
    expect(section(draft, "description")).toContain("PNG image, 900 x 320 pixels (0.3 megapixels), landscape.")
    expect(section(draft, "description")).toContain("No camera metadata (EXIF).")
    for (const word of scanWords) expect(section(draft, "text")).toContain(word)
    expect({ pagesRead: draft.pagesRead, pagesTotal: draft.pagesTotal, truncated: draft.truncated })
      .toEqual({ pagesRead: null, pagesTotal: null, truncated: false })
    expect(draft.model).toBe(EMBEDDED_IMAGE_MODEL)
    expect(draft.text).toBe(`Description:\n${section(draft, "description")}\n\nText:\n${section(draft, "text")}`)
  })

  it("reports a JPEG's EXIF camera, date taken, orientation and that it holds GPS, without the coordinates", async () => {
    const draft = await summarize(image(fixture("receipt.jpg"), "image/jpeg"))
    const description = section(draft, "description")

    expect(description).toContain("JPEG image, 800 x 500 pixels")
    expect(description).toContain("Camera: Canon EOS 80D.")
    expect(description).toContain("Taken: 2026-03-14 09:26:53.")
    expect(description).toContain("Location: GPS coordinates are embedded.")
    expect(description).toContain("Orientation: Horizontal (normal).")
    expect(description).not.toMatch(/52[.,]3|4[.,]90/)
    for (const word of ["ACME", "WIDGETS", "4821", "99.50"]) expect(section(draft, "text")).toContain(word)
  })

  it("times a 2-megapixel photo with the worker already running", async () => {
    const started = performance.now()
    const draft = await summarize(image(fixture("photo-2mp.jpg"), "image/jpeg"))
    console.log(`embedded image 1728x1152 JPEG (2.0 MP): ${(performance.now() - started).toFixed(0)} ms`)
    expect(section(draft, "description")).toContain("1728 x 1152 pixels (2.0 megapixels)")
    expect(section(draft, "text")).toContain("WAREHOUSE")
  })

  it("fails with Unreadable for a truncated image and for bytes that are no image", async () => {
    const png = fixture("text-scan.png")
    for (const bytes of [png.slice(0, 200), new TextEncoder().encode("definitely not an image"), new Uint8Array(0)]) {
      expect(await failure(summarizer, image(bytes, "image/png"))).toMatchObject({ reason: "Unreadable" })
    }
    // The worker outlives a bad image: the next one is read.
    expect(section(await summarize(image(png, "image/png")), "text")).toContain("4821")
  })
})

describe("the OCR worker", () => {
  it("bounds OCR time: past ocrTimeoutMs the summary fails with Timeout, and the next image is tried afresh", async () => {
    const hasty = makeEmbeddedSummarizer({ ocrTimeoutMs: 1 })
    try {
      const input = image(fixture("text-scan.png"), "image/png")
      expect(await failure(hasty, input)).toMatchObject({ reason: "Timeout" })
      expect(await failure(hasty, input)).toMatchObject({ reason: "Timeout" })
    } finally {
      await hasty.close()
    }
  })

  // The data path is a local directory, so tesseract.js reads it from disk (it turns to its CDN only
  // for a URL or no path at all); this machine reaches no CDN, so every OCR test above passing shows
  // nothing needed fetching. Damaged data is not tried: tesseract.js 7 then answers the same job
  // twice, and its second answer throws in the main thread.
  it("reads its language data from the given directory only: missing there, OCR fails at once", async () => {
    const empty = mkdtempSync(join(tmpdir(), "no-traineddata-"))
    const starved = makeEmbeddedSummarizer({ ocrLangPath: empty, ocrTimeoutMs: 60_000 })
    try {
      const error = await failure(starved, image(fixture("text-scan.png"), "image/png"))
      expect(error).toMatchObject({ reason: "Unavailable" })
      expect(error.message).toContain(empty)
    } finally {
      await starved.close()
      rmSync(empty, { recursive: true, force: true })
    }
  })

  it("is closed by close(): later images fail with Unavailable, PDFs still work", async () => {
    const closing = makeEmbeddedSummarizer()
    await closing.close()
    expect(await failure(closing, image(fixture("text-scan.png"), "image/png"))).toMatchObject({ reason: "Unavailable" })
    expect((await Effect.runPromise(closing.summarize(pdf(invoicePdf())))).pagesRead).toBe(3)
  })

  it("opened no socket and made no request from this thread during any of the above", () => {
    expect(connections).toEqual([])
  })
})

describe("the model name", () => {
  it("names the versions of the libraries installed", async () => {
    const require = createRequire(import.meta.url)
    const installed = (name: string) => {
      const main = require.resolve(name)
      let dir = dirname(main)
      while (!dir.endsWith(join("node_modules", name))) dir = dirname(dir)
      return (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version
    }
    for (const name of ["unpdf", "tesseract.js", "@tesseract.js-data/eng", "image-size", "exifr"] as const) {
      expect(`${name} ${installed(name)}`).toBe(`${name} ${EMBEDDED_LIBRARIES[name]}`)
    }
    expect((await getResolvedPDFJS()).version).toBe(EMBEDDED_LIBRARIES["pdf.js"])
  })
})
