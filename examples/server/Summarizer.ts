import type { OutboundHttp } from "omnichannel-core"
import { makeEmbeddedSummarizer, makeOpenAiSummarizer, type Summarizer } from "omnichannel-core/summarizer"

/** The summarizer the host runs with, and how to end it. */
export interface HostSummarizer {
  readonly summarizer: Summarizer["Service"]
  /** Ends what the summarizer keeps running (the embedded OCR worker); the outbound client is the host's to close. */
  readonly close: () => Promise<void>
}

/**
 * Picks the host's summarizer from the environment as HOST.md documents it: `OMNI_SUMMARIZER_URL`
 * (with `OMNI_SUMMARIZER_MODEL` and `OMNI_SUMMARIZER_API_KEY`) selects an OpenAI-compatible API,
 * called through the guarded `outbound` client (so a private address needs `OMNI_OUTBOUND_ALLOW`);
 * unset, the embedded summarizer, which needs no network. Throws when the URL is not http(s) or
 * no model is named.
 *
 * Wiring in main.ts: `const summaries = hostSummarizer(process.env, outbound)`, hand
 * `summaries.summarizer` to `make(...)`, and `await summaries.close()` in `release` before
 * `outbound.close()`.
 */
export const hostSummarizer = (
  env: Readonly<Record<string, string | undefined>>,
  outbound: OutboundHttp["Service"]
): HostSummarizer => {
  const url = env.OMNI_SUMMARIZER_URL
  if (url === undefined || url === "") {
    const embedded = makeEmbeddedSummarizer()
    return { summarizer: embedded, close: embedded.close }
  }
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new Error(`OMNI_SUMMARIZER_URL must be an http(s) URL, got ${JSON.stringify(url)}`)
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new Error(`OMNI_SUMMARIZER_URL must be an http(s) URL, got ${JSON.stringify(url)}`)
  }
  const model = env.OMNI_SUMMARIZER_MODEL
  if (model === undefined || model.trim() === "") {
    throw new Error("OMNI_SUMMARIZER_MODEL must name the model to ask when OMNI_SUMMARIZER_URL is set")
  }
  const summarizer = makeOpenAiSummarizer({
    baseUrl: url.replace(/\/+$/, ""),
    model: model.trim(),
    apiKey: env.OMNI_SUMMARIZER_API_KEY || undefined,
    outbound
  })
  return { summarizer, close: async () => {} }
}
