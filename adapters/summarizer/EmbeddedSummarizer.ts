import { Effect } from "effect"
import { type SummarizeInput, type Summarizer, SummarizerError, type SummaryDraft, type SummarySection } from "../../src/ports/Summarizer.ts"
import { describeImage, ImageFactsError, readImageFacts } from "./ImageFacts.ts"
import { findKeyFacts, keyFactsText } from "./KeyFacts.ts"
import { makeOcr, OcrError } from "./Ocr.ts"
import { PdfTextError, readPdfText } from "./PdfText.ts"
import { summarizeText } from "./SentenceRank.ts"
import { joinSections } from "./Sections.ts"
import { EMBEDDED_IMAGE_MODEL, EMBEDDED_PDF_MODEL } from "./EmbeddedModel.ts"

/** How the embedded summarizer is set up. */
export interface EmbeddedSummarizerOptions {
  /** Longest one image's OCR may take, in real milliseconds (default 30 s); past it the summary fails with `Timeout`. */
  readonly ocrTimeoutMs?: number
  /** Longest reading one PDF's text may take, in real milliseconds (default 30 s). */
  readonly pdfTimeoutMs?: number
  /** A directory holding `eng.traineddata.gz`; default the data `@tesseract.js-data/eng` installs. */
  readonly ocrLangPath?: string
}

/** The embedded summarizer, plus `close` to end its OCR worker (resolves once it has ended). */
export type EmbeddedSummarizer = Summarizer["Service"] & {
  readonly close: () => Promise<void>
}

// Images larger than this are described but not read: tesseract holds several copies of the
// decoded pixels (4 bytes each), and a 10 MB PNG of one colour can hold hundreds of megapixels.
const MAX_OCR_PIXELS = 25_000_000
// The OCR text kept in the `text` section.
const MAX_OCR_CHARS = 4_000

const failure = (error: unknown): SummarizerError => {
  if (error instanceof SummarizerError) return error
  if (error instanceof PdfTextError || error instanceof OcrError) {
    return new SummarizerError({ reason: error.reason, message: error.message })
  }
  if (error instanceof ImageFactsError) return new SummarizerError({ reason: "Unreadable", message: error.message })
  return new SummarizerError({
    reason: "Unavailable",
    message: `the embedded summarizer failed: ${error instanceof Error ? error.message : String(error)}`
  })
}

// OCR output, whitespace tidied, empty lines dropped, cut at MAX_OCR_CHARS on a line.
const tidyOcr = (raw: string): string => {
  const lines = raw.split(/\r?\n/).map((line) => line.replace(/\s+/g, " ").trim()).filter((line) => line !== "")
  let text = ""
  for (const line of lines) {
    if (text.length + line.length + 1 > MAX_OCR_CHARS) return `${text}\n…`.trim()
    text = text === "" ? line : `${text}\n${line}`
  }
  return text
}

/**
 * A PDF's summary: the text of its first `maxPages` pages, the best sentences of it (`summary`)
 * and the dates, amounts, names, emails and references in it (`key_facts`).
 */
export const summarizePdf = async (input: SummarizeInput, timeoutMs: number): Promise<SummaryDraft> => {
  const { pages, pagesTotal } = await readPdfText(input.bytes, input.maxPages, timeoutMs)
  const text = pages.join("\n\n")
  const sentences = summarizeText(text)
  const summary = sentences.length > 0
    ? sentences.join(" ")
    : `No text could be read from the first ${pages.length} of ${pagesTotal} pages (they may hold only scanned images).`
  const sections: ReadonlyArray<SummarySection> = [
    { key: "summary", text: summary },
    { key: "key_facts", text: keyFactsText(findKeyFacts(text)) }
  ]
  return {
    text: joinSections(sections),
    sections,
    pagesRead: pages.length,
    pagesTotal,
    truncated: pagesTotal > pages.length,
    model: EMBEDDED_PDF_MODEL
  }
}

/**
 * The embedded summarizer: no network and no model download. PDFs: pdf.js text of the first
 * `maxPages` pages, an extractive summary (TextRank) and key facts by pattern. Images: format, pixel
 * size and EXIF facts (`description`) and the text tesseract.js reads in them (`text`), one image at
 * a time in one reused worker thread. Damaged or encrypted files fail with `Unreadable`.
 */
export const makeEmbeddedSummarizer = (options: EmbeddedSummarizerOptions = {}): EmbeddedSummarizer => {
  const ocrTimeoutMs = options.ocrTimeoutMs ?? 30_000
  const pdfTimeoutMs = options.pdfTimeoutMs ?? 30_000
  const ocr = makeOcr(options.ocrLangPath)

  const summarizeImage = async (input: SummarizeInput, signal: AbortSignal): Promise<SummaryDraft> => {
    const facts = await readImageFacts(input.bytes)
    const pixels = facts.width * facts.height
    const read = pixels > MAX_OCR_PIXELS
      ? `The image is too large to read text from (${(pixels / 1e6).toFixed(0)} megapixels; at most ${MAX_OCR_PIXELS / 1e6}).`
      : tidyOcr(await ocr.recognize(input.bytes, ocrTimeoutMs, signal)) || "No text found in the image."
    const sections: ReadonlyArray<SummarySection> = [
      { key: "description", text: describeImage(facts) },
      { key: "text", text: read }
    ]
    return { text: joinSections(sections), sections, pagesRead: null, pagesTotal: null, truncated: false, model: EMBEDDED_IMAGE_MODEL }
  }

  return {
    summarize: Effect.fn("EmbeddedSummarizer.summarize")((input: SummarizeInput) =>
      Effect.tryPromise({
        try: (signal) => input.kind === "pdf" ? summarizePdf(input, pdfTimeoutMs) : summarizeImage(input, signal),
        catch: failure
      })
    ),
    close: ocr.close
  }
}
