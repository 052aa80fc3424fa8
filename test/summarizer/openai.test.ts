import { createServer } from "node:net"
import { Effect } from "effect"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { makeOpenAiSummarizer } from "../../adapters/summarizer/index.ts"
import { SYSTEM_PROMPTS } from "../../adapters/summarizer/OpenAiSummarizer.ts"
import type { Summarizer, SummarizeInput } from "../../src/ports/Summarizer.ts"
import { FAKE_MODEL, type FakeOpenAi, type FakeOpenAiRequest, startFakeOpenAi } from "../support/FakeOpenAi.ts"
import { damagedPdf, fixture, injectionPdf, injectionText, invoicePdf, reportMarker, reportPdf } from "../support/SummaryFixtures.ts"

const pdf = (bytes: Uint8Array): SummarizeInput => ({
  kind: "pdf",
  contentType: "application/pdf",
  filename: "invoice.pdf",
  bytes,
  maxPages: 10
})
const png = fixture("text-scan.png")
const image: SummarizeInput = { kind: "image", contentType: "image/png", filename: "scan.png", bytes: png, maxPages: 10 }

let fake: FakeOpenAi
let client: GuardedHttp
let summarizer: Summarizer["Service"]

beforeAll(async () => {
  fake = await startFakeOpenAi()
  client = makeGuardedHttp({ allow: [fake.hostPort] })
  summarizer = makeOpenAiSummarizer({ baseUrl: fake.url, model: "gpt-test", apiKey: "sk-test-key", timeoutMs: 2_000, outbound: client })
})
afterAll(async () => {
  await client.close()
  await fake.close()
})
afterEach(() => fake.answerWith({ kind: "ok" }))

const summarize = (input: SummarizeInput, target = summarizer) => Effect.runPromise(target.summarize(input))
const failure = (input: SummarizeInput, target = summarizer) => Effect.runPromise(Effect.flip(target.summarize(input)))
const lastRequest = (): FakeOpenAiRequest => fake.requests().at(-1)!

type Sent = {
  readonly model: string
  readonly messages: ReadonlyArray<{ readonly role: string; readonly content: unknown }>
}
const sent = (): Sent => lastRequest().json as Sent

describe("an image", () => {
  it("goes as image input, a base64 data: URL of its bytes, with the image system prompt, the model and the key", async () => {
    const draft = await summarize(image)

    const request = lastRequest()
    expect(request).toMatchObject({ method: "POST", path: "/v1/chat/completions" })
    expect(request.headers.authorization).toBe("Bearer sk-test-key")
    expect(request.headers["content-type"]).toBe("application/json")
    expect(sent().model).toBe("gpt-test")
    expect(sent().messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPTS.image })
    expect(sent().messages[1]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "Describe the image file \"scan.png\" (image/png)." },
        { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from(png).toString("base64")}` } }
      ]
    })
    expect(draft).toEqual({
      text: `Description:\nAn image of ${png.byteLength} bytes (image/png).\n\nText:\nDELIVERY NOTE 4821`,
      sections: [
        { key: "description", text: `An image of ${png.byteLength} bytes (image/png).` },
        { key: "text", text: "DELIVERY NOTE 4821" }
      ],
      pagesRead: null,
      pagesTotal: null,
      truncated: false,
      model: FAKE_MODEL
    })
  })
})

describe("a PDF", () => {
  it("goes as the text of its pages, never as its bytes, and comes back in summary and key_facts sections", async () => {
    const draft = await summarize(pdf(invoicePdf()))

    expect(sent().messages[0]).toEqual({ role: "system", content: SYSTEM_PROMPTS.pdf })
    const user = sent().messages[1]!
    expect(user.role).toBe("user")
    expect(typeof user.content).toBe("string")
    expect(user.content).toContain("The PDF file \"invoice.pdf\" has 3 pages; the text of the first 3 follows.")
    expect(user.content).toContain("[Page 1]\nNorthwind Traders GmbH")
    expect(user.content).toContain("INV-2026-0042")
    expect(lastRequest().body).not.toContain("%PDF")
    expect(lastRequest().body).not.toContain("image_url")
    expect(draft.sections.map((s) => s.key)).toEqual(["summary", "key_facts"])
    expect(draft.sections[0]!.text).toContain("Northwind Traders GmbH")
    expect({ pagesRead: draft.pagesRead, pagesTotal: draft.pagesTotal, truncated: draft.truncated, model: draft.model })
      .toEqual({ pagesRead: 3, pagesTotal: 3, truncated: false, model: FAKE_MODEL })
  })

  it("sends only the first 10 pages of a 12-page PDF and reports it truncated", async () => {
    const draft = await summarize(pdf(reportPdf(12)))

    expect(sent().messages[1]!.content).toContain(reportMarker(10))
    expect(sent().messages[1]!.content).not.toContain(reportMarker(11))
    expect(sent().messages[1]!.content).toContain("has 12 pages; the text of the first 10 follows")
    expect({ pagesRead: draft.pagesRead, pagesTotal: draft.pagesTotal, truncated: draft.truncated })
      .toEqual({ pagesRead: 10, pagesTotal: 12, truncated: true })
  })

  it("keeps a prompt injection inside the document markers as data, and returns what the model says as plain text", async () => {
    const draft = await summarize(pdf(injectionPdf()))

    const [system, user] = sent().messages
    expect(system).toEqual({ role: "system", content: SYSTEM_PROMPTS.pdf })
    expect(sent().messages).toHaveLength(2)
    const content = user!.content as string
    const inside = content.slice(content.indexOf("<document>"), content.indexOf("</document>"))
    expect(inside).toContain("<script>alert(1)</script>")
    expect(inside).toContain("Ignore previous instructions")
    expect(draft.sections[0]!.text).toContain(injectionText.slice(0, 40))
  })

  it("fails with Unreadable, asking nothing, for a damaged or encrypted PDF", async () => {
    const before = fake.requests().length
    for (const bytes of [damagedPdf(), fixture("encrypted.pdf")]) {
      expect(await failure(pdf(bytes))).toMatchObject({ _tag: "SummarizerError", reason: "Unreadable" })
    }
    expect(fake.requests()).toHaveLength(before)
  })
})

describe("the answer", () => {
  it("is split under headings written in Markdown too", async () => {
    fake.answerWith({ kind: "ok", content: "Here you go.\n\n## Summary\nAn invoice.\n\n**Key facts:**\n- Total EUR 1,250.00" })
    const draft = await summarize(pdf(invoicePdf()))
    expect(draft.sections).toEqual([{ key: "summary", text: "An invoice." }, { key: "key_facts", text: "- Total EUR 1,250.00" }])
    expect(draft.text).toBe("Summary:\nAn invoice.\n\nKey facts:\n- Total EUR 1,250.00")
  })

  it("that cannot be split keeps its text with no sections", async () => {
    fake.answerWith({ kind: "ok", content: "  A scanned delivery note from ACME.  " })
    expect(await summarize(image)).toMatchObject({ text: "A scanned delivery note from ACME.", sections: [] })
    fake.answerWith({ kind: "ok", content: "Description:\nA note.\n(no text section)" })
    expect(await summarize(image)).toMatchObject({ text: "Description:\nA note.\n(no text section)", sections: [] })
  })

  it("names the model the server answered, or the configured one when it names none", async () => {
    fake.answerWith({ kind: "ok", model: "vision-large-2026-01" })
    expect((await summarize(image)).model).toBe("vision-large-2026-01")
    fake.answerWith({ kind: "malformed", body: JSON.stringify({ choices: [{ message: { content: "Description:\nA.\nText:\nB" } }] }) })
    expect((await summarize(image)).model).toBe("gpt-test")
  })
})

describe("failures", () => {
  it("fails with Timeout when the model answers after timeoutMs", async () => {
    fake.answerWith({ kind: "slow", delayMs: 10_000 })
    const hasty = makeOpenAiSummarizer({ baseUrl: fake.url, model: "gpt-test", timeoutMs: 300, outbound: client })
    const started = performance.now()
    expect(await failure(image, hasty)).toMatchObject({ reason: "Timeout" })
    expect(performance.now() - started).toBeLessThan(5_000)
  })

  it("fails with Unavailable on an HTTP error, naming the status and the server's message", async () => {
    for (const status of [500, 503, 401, 429]) {
      fake.answerWith({ kind: "error", status, message: "model overloaded" })
      const error = await failure(image)
      expect(error).toMatchObject({ reason: "Unavailable" })
      expect(error.message).toBe(`the model answered HTTP ${status}: model overloaded`)
    }
  })

  it("fails with Malformed when the answer is not JSON, has no choices, or no text", async () => {
    const bodies = [
      "<html>Bad gateway</html>",
      "{\"choices\": []}",
      "{\"id\": \"x\"}",
      JSON.stringify({ choices: [{ message: { role: "assistant", content: null, refusal: "I cannot help" } }] }),
      JSON.stringify({ choices: [{ message: { role: "assistant", content: "   " } }] }),
      "[1, 2, 3]"
    ]
    for (const body of bodies) {
      fake.answerWith({ kind: "malformed", body })
      expect(await failure(image)).toMatchObject({ reason: "Malformed" })
    }
  })

  it("fails with Unavailable when nothing listens at the URL", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number }
        probe.close(() => resolve(port))
      })
    })
    const nowhere = makeGuardedHttp({ allow: [`127.0.0.1:${port}`] })
    try {
      const target = makeOpenAiSummarizer({ baseUrl: `http://127.0.0.1:${port}/v1`, model: "m", outbound: nowhere, timeoutMs: 2_000 })
      expect(await failure(image, target)).toMatchObject({ reason: "Unavailable" })
    } finally {
      await nowhere.close()
    }
  })

  it("goes through the guard: a private address is refused unless allowed, and nothing reaches it", async () => {
    const strict = makeGuardedHttp({ allow: [] })
    try {
      const before = fake.requests().length
      const target = makeOpenAiSummarizer({ baseUrl: fake.url, model: "m", outbound: strict })
      const error = await failure(image, target)
      expect(error).toMatchObject({ reason: "Unavailable" })
      expect(error.message).toContain("not allowed")
      expect(fake.requests()).toHaveLength(before)
    } finally {
      await strict.close()
    }
  })
})
