import { getDocumentProxy } from "unpdf"

/** The text of a PDF's first pages, one string per page read. */
export interface PdfText {
  readonly pages: ReadonlyArray<string>
  readonly pagesTotal: number
}

/** Why a PDF's text could not be read: `Unreadable` (damaged, encrypted, not a PDF) or `Timeout`. */
export class PdfTextError extends Error {
  constructor(readonly reason: "Unreadable" | "Timeout", message: string) {
    super(message)
    this.name = "PdfTextError"
  }
}

/** pdf.js's own names for a file it cannot open (`PasswordException` for an encrypted one). */
const UNREADABLE_NAMES = new Set([
  "PasswordException",
  "InvalidPDFException",
  "FormatError",
  "UnknownErrorException",
  "UnexpectedResponseException",
  "MissingPDFException",
  "ResponseException"
])

const describe = (error: unknown): string => {
  if (error instanceof Error) {
    if (error.name === "PasswordException") return "the PDF is encrypted (a password is needed to open it)"
    if (UNREADABLE_NAMES.has(error.name)) return `the PDF is damaged: ${error.message}`
    return `the PDF could not be read: ${error.message}`
  }
  return "the PDF could not be read"
}

// A page's text items in reading order: a line ends where pdf.js saw one end, and items that touch
// are glued (pdf.js reports inter-word spaces as items of their own).
const pageText = (items: ReadonlyArray<unknown>): string => {
  let text = ""
  for (const item of items) {
    if (typeof item !== "object" || item === null || !("str" in item) || typeof item.str !== "string") continue
    text += item.str
    if ("hasEOL" in item && item.hasEOL === true) text += "\n"
  }
  return text.replace(/[^\S\n]+/g, " ").replace(/ *\n */g, "\n").trim()
}

/**
 * Reads the text of the first `maxPages` pages of `bytes` with pdf.js (the serverless build unpdf
 * ships: pure JS, no worker thread, no canvas), one page at a time, releasing each page's resources
 * before the next. That build holds no `eval` path and runs no document scripts; nothing is fetched
 * (no font, character-map or WebAssembly URLs are given). Rejects with `PdfTextError`: `Unreadable`
 * for a damaged or encrypted file, `Timeout` past `timeoutMs` (checked between pages).
 */
export const readPdfText = async (bytes: Uint8Array, maxPages: number, timeoutMs: number): Promise<PdfText> => {
  const deadline = performance.now() + timeoutMs
  const overdue = () => {
    if (performance.now() > deadline) throw new PdfTextError("Timeout", `reading the PDF took longer than ${timeoutMs} ms`)
  }
  let document: Awaited<ReturnType<typeof getDocumentProxy>>
  try {
    // pdf.js takes ownership of (and may detach) the buffer it is given: it gets a copy.
    document = await getDocumentProxy(new Uint8Array(bytes), {
      useSystemFonts: false,
      disableFontFace: true,
      enableXfa: false,
      // Warnings about broken files go to the console otherwise; errors still reject.
      verbosity: 0
    })
  } catch (error) {
    throw new PdfTextError("Unreadable", describe(error))
  }
  try {
    const pagesTotal = document.numPages
    if (pagesTotal < 1) throw new PdfTextError("Unreadable", "the PDF has no pages")
    const pages: Array<string> = []
    for (let number = 1; number <= Math.min(maxPages, pagesTotal); number++) {
      overdue()
      const page = await document.getPage(number)
      try {
        pages.push(pageText((await page.getTextContent()).items))
      } finally {
        page.cleanup()
      }
    }
    overdue()
    return { pages, pagesTotal }
  } catch (error) {
    if (error instanceof PdfTextError) throw error
    throw new PdfTextError("Unreadable", describe(error))
  } finally {
    await document.loadingTask.destroy()
  }
}
