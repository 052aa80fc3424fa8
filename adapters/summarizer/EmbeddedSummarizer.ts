import { Effect } from "effect"
import { type Summarizer, SummarizerError } from "../../src/ports/Summarizer.ts"

/** How the embedded summarizer is set up. */
export interface EmbeddedSummarizerOptions {
  /** Longest one image's OCR may take, in real milliseconds (default 30 s); past it the summary fails with `Timeout`. */
  readonly ocrTimeoutMs?: number
}

/** The embedded summarizer, plus `close` to end its OCR worker (resolves once it has ended). */
export type EmbeddedSummarizer = Summarizer["Service"] & {
  readonly close: () => Promise<void>
}

/** The embedded summarizer: offline PDF text and sentence ranking, image facts and OCR. */
export const makeEmbeddedSummarizer = (_options: EmbeddedSummarizerOptions = {}): EmbeddedSummarizer => ({
  summarize: () => Effect.fail(new SummarizerError({ reason: "Unavailable", message: "the embedded summarizer is not ready" })),
  close: async () => {}
})
