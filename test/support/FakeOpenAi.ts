import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** A request as the fake model saw it. */
export interface FakeOpenAiRequest {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown
}

/**
 * How the fake answers `POST /v1/chat/completions`:
 * - `ok`: a chat completion whose content is `content`, or (unset) two sections under the headings
 *   the request's kind asks for, quoting what was sent (the PDF's text, or the image's size);
 * - `slow`: the same answer after `delayMs` (real time): longer than the client waits;
 * - `error`: HTTP `status` with an OpenAI error body;
 * - `malformed`: a 200 whose body is `body` as it is (not JSON, or JSON without choices).
 */
export type FakeOpenAiAnswer =
  | { readonly kind: "ok"; readonly content?: string; readonly model?: string }
  | { readonly kind: "slow"; readonly delayMs: number }
  | { readonly kind: "error"; readonly status: number; readonly message?: string }
  | { readonly kind: "malformed"; readonly body: string }

/** An OpenAI-compatible chat-completions server on 127.0.0.1. */
export interface FakeOpenAi {
  /** `http://127.0.0.1:<port>/v1`: the base URL to hand the adapter (`OMNI_SUMMARIZER_URL`). */
  readonly url: string
  /** `127.0.0.1:<port>`, as `OMNI_OUTBOUND_ALLOW` takes it. */
  readonly hostPort: string
  /** Every request received so far, in order. */
  readonly requests: () => ReadonlyArray<FakeOpenAiRequest>
  /** How later requests are answered (`ok` until set). */
  readonly answerWith: (answer: FakeOpenAiAnswer) => void
  readonly close: () => Promise<void>
}

/** The model name the fake answers with unless an `ok` answer names another. */
export const FAKE_MODEL = "fake-vision-1"

type Part = { readonly type?: unknown; readonly text?: unknown; readonly image_url?: { readonly url?: unknown } }

const userParts = (json: unknown): ReadonlyArray<Part> => {
  const messages = typeof json === "object" && json !== null && "messages" in json && Array.isArray(json.messages)
    ? json.messages as ReadonlyArray<{ readonly role?: unknown; readonly content?: unknown }>
    : []
  const parts: Array<Part> = []
  for (const message of messages) {
    if (message.role !== "user") continue
    if (typeof message.content === "string") parts.push({ type: "text", text: message.content })
    else if (Array.isArray(message.content)) parts.push(...message.content as ReadonlyArray<Part>)
  }
  return parts
}

/** The content an `ok` answer carries when none is scripted: the kind's two sections, quoting the input. */
const defaultContent = (json: unknown): string => {
  const parts = userParts(json)
  const image = parts.find((part) => part.type === "image_url")
  if (image !== undefined) {
    const url = typeof image.image_url?.url === "string" ? image.image_url.url : ""
    const base64 = url.slice(url.indexOf(",") + 1)
    return `Description:\nAn image of ${Buffer.from(base64, "base64").byteLength} bytes (${url.slice(5, url.indexOf(";"))}).\n` +
      "Text:\nDELIVERY NOTE 4821"
  }
  const text = parts.map((part) => typeof part.text === "string" ? part.text : "").join("\n")
  const document = /<document>\n([\s\S]*?)\n<\/document>/.exec(text)?.[1] ?? text
  return `Summary:\nThe document reads: ${document.replace(/\s+/g, " ").slice(0, 300)}\nKey facts:\nNone noted.`
}

/** Starts the fake on a free port of 127.0.0.1. */
export const startFakeOpenAi = async (): Promise<FakeOpenAi> => {
  const received: Array<FakeOpenAiRequest> = []
  let answer: FakeOpenAiAnswer = { kind: "ok" }
  const timers = new Set<ReturnType<typeof setTimeout>>()

  const completion = (json: unknown, content?: string, model = FAKE_MODEL) => JSON.stringify({
    id: `chatcmpl-${received.length}`,
    object: "chat.completion",
    created: 1_790_000_000,
    model,
    choices: [{ index: 0, message: { role: "assistant", content: content ?? defaultContent(json) }, finish_reason: "stop" }],
    usage: { prompt_tokens: 100, completion_tokens: 40, total_tokens: 140 }
  })

  const server = http.createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      received.push({ method: request.method ?? "", path: request.url ?? "", headers: request.headers, body, json })
      const send = (status: number, text: string, type = "application/json") => {
        response.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) })
        response.end(text)
      }
      if (request.method !== "POST" || request.url !== "/v1/chat/completions") {
        return send(404, JSON.stringify({ error: { message: "Unknown route", type: "invalid_request_error" } }))
      }
      const current = answer
      switch (current.kind) {
        case "ok":
          return send(200, completion(json, current.content, current.model))
        case "slow": {
          const timer = setTimeout(() => {
            timers.delete(timer)
            if (!response.destroyed) send(200, completion(json))
          }, current.delayMs)
          timers.add(timer)
          return
        }
        case "error":
          return send(current.status, JSON.stringify({
            error: { message: current.message ?? "The server had an error", type: "server_error", code: null }
          }))
        case "malformed":
          return send(200, current.body)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    hostPort: `127.0.0.1:${port}`,
    requests: () => [...received],
    answerWith: (next) => {
      answer = next
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer)
        timers.clear()
        server.close(() => resolve())
        // Slow answers and kept-alive connections would keep `close` waiting.
        server.closeAllConnections()
      })
  }
}
