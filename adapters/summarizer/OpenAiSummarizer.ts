import { Effect } from "effect"
import type { OutboundHttp } from "../../src/ports/OutboundHttp.ts"
import { type Summarizer, SummarizerError } from "../../src/ports/Summarizer.ts"

/** Where an OpenAI-compatible chat-completions API is and how to call it. */
export interface OpenAiSummarizerOptions {
  /** The API's base URL, version included (`https://api.example/v1`); `/chat/completions` is appended. */
  readonly baseUrl: string
  readonly model: string
  /** Sent as `Authorization: Bearer …` when set. */
  readonly apiKey?: string | undefined
  /** Whole-exchange limit in real milliseconds (default 60 s). */
  readonly timeoutMs?: number | undefined
  /** The guarded outbound client every request goes through. */
  readonly outbound: OutboundHttp["Service"]
}

/** A summarizer that asks an OpenAI-compatible model. */
export const makeOpenAiSummarizer = (_options: OpenAiSummarizerOptions): Summarizer["Service"] => ({
  summarize: () => Effect.fail(new SummarizerError({ reason: "Unavailable", message: "the OpenAI-compatible summarizer is not ready" }))
})
