/** `omnichannel-core/summarizer`: the Summarizer port, embedded and offline or through an OpenAI-compatible API. */
export { type EmbeddedSummarizer, type EmbeddedSummarizerOptions, makeEmbeddedSummarizer } from "./EmbeddedSummarizer.ts"
export { makeOpenAiSummarizer, type OpenAiSummarizerOptions } from "./OpenAiSummarizer.ts"
// The port's types these signatures name, so an application can type against this entry alone.
export type { SummarizeInput, Summarizer, SummarizerError, SummaryDraft, SummarySection } from "../../src/ports/Summarizer.ts"
