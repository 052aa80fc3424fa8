import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { EMBEDDED_PDF_MODEL } from "../../adapters/summarizer/EmbeddedModel.ts"
import { hostSummarizer } from "../../examples/server/Summarizer.ts"
import type { SummarizeInput } from "../../src/ports/Summarizer.ts"
import { type FakeOpenAi, startFakeOpenAi } from "../support/FakeOpenAi.ts"
import { invoicePdf } from "../support/SummaryFixtures.ts"

const input: SummarizeInput = { kind: "pdf", contentType: "application/pdf", filename: "a.pdf", bytes: invoicePdf(), maxPages: 10 }

let fake: FakeOpenAi
beforeAll(async () => {
  fake = await startFakeOpenAi()
})
afterAll(() => fake.close())

describe("the host's summarizer", () => {
  it("is the embedded one when OMNI_SUMMARIZER_URL is unset or empty", async () => {
    const outbound = makeGuardedHttp({ allow: [] })
    for (const env of [{}, { OMNI_SUMMARIZER_URL: "" }]) {
      const chosen = hostSummarizer(env, outbound)
      try {
        expect((await Effect.runPromise(chosen.summarizer.summarize(input))).model).toBe(EMBEDDED_PDF_MODEL)
      } finally {
        await chosen.close()
      }
    }
    await outbound.close()
  })

  it("is the OpenAI-compatible one at OMNI_SUMMARIZER_URL, with its model and key, through the host's guarded client", async () => {
    const outbound = makeGuardedHttp({ allow: [fake.hostPort] })
    const chosen = hostSummarizer({
      OMNI_SUMMARIZER_URL: `${fake.url}/`,
      OMNI_SUMMARIZER_MODEL: "gpt-host",
      OMNI_SUMMARIZER_API_KEY: "sk-host"
    }, outbound)
    try {
      const draft = await Effect.runPromise(chosen.summarizer.summarize(input))
      expect(draft.sections.map((s) => s.key)).toEqual(["summary", "key_facts"])
      const request = fake.requests().at(-1)!
      expect(request.path).toBe("/v1/chat/completions")
      expect(request.headers.authorization).toBe("Bearer sk-host")
      expect(request.json).toMatchObject({ model: "gpt-host" })
    } finally {
      await chosen.close()
      await outbound.close()
    }
  })

  it("refuses a URL that is not http(s), or a URL without a model, naming the variable", () => {
    const outbound = makeGuardedHttp({ allow: [] })
    const model = { OMNI_SUMMARIZER_MODEL: "m" }
    expect(() => hostSummarizer({ ...model, OMNI_SUMMARIZER_URL: "ftp://models.example/v1" }, outbound)).toThrow(/OMNI_SUMMARIZER_URL/)
    expect(() => hostSummarizer({ ...model, OMNI_SUMMARIZER_URL: "not a url" }, outbound)).toThrow(/OMNI_SUMMARIZER_URL/)
    expect(() => hostSummarizer({ OMNI_SUMMARIZER_URL: "https://models.example/v1" }, outbound)).toThrow(/OMNI_SUMMARIZER_MODEL/)
    return outbound.close()
  })
})
