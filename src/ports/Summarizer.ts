import { Context, type Effect, Schema } from "effect"

/** What a summarizer is asked to read: one inbound image or PDF, its bytes read already. */
export interface SummarizeInput {
  readonly kind: "image" | "pdf"
  /** The type the bytes were found to be (`image/png`, `application/pdf`, …). */
  readonly contentType: string
  readonly filename: string
  /** At most 10 MB for an image and 20 MB for a PDF: the service refuses larger files first. */
  readonly bytes: Uint8Array
  /** PDFs: read at most this many pages (the spec's 10). */
  readonly maxPages: number
}

/** One titled part of a summary: `description`/`text` for images, `summary`/`key_facts` for PDFs. */
export interface SummarySection {
  readonly key: string
  readonly text: string
}

/**
 * What a summarizer wrote. All text is untrusted (it is derived from customer content): the
 * service stores and returns it as plain text and never renders or follows it.
 */
export interface SummaryDraft {
  /** The whole summary as plain text. */
  readonly text: string
  /** Empty when the text could not be split into the kind's sections. */
  readonly sections: ReadonlyArray<SummarySection>
  /** PDFs only; null for images. */
  readonly pagesRead: number | null
  readonly pagesTotal: number | null
  /** True when a PDF has more pages than were read; false for images. */
  readonly truncated: boolean
  /** The implementation and its version, or the remote model's name. */
  readonly model: string
}

/**
 * A summary could not be made: `Unreadable` (the file is damaged, encrypted or not what it claims),
 * `Timeout` (the model did not answer in time), `Unavailable` (the model could not be reached or
 * answered an error), `Malformed` (the model answered something that is not a summary).
 */
export class SummarizerError extends Schema.TaggedError<SummarizerError>()("SummarizerError", {
  reason: Schema.Literals(["Unreadable", "Timeout", "Unavailable", "Malformed"]),
  message: Schema.String
}) {}

/** Turns one image or PDF into a plain-text summary: embedded and offline, or a remote model. */
export class Summarizer extends Context.Service<Summarizer, {
  readonly summarize: (input: SummarizeInput) => Effect.Effect<SummaryDraft, SummarizerError>
}>()("omnichannel-core/ports/Summarizer") {}
