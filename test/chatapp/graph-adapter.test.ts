import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { createHash } from "node:crypto"
import { Effect } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { makeGraphChatPlatform } from "../../adapters/chatapp/GraphChatPlatform.ts"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import type { ChatappCredentials, ChatPlatform, ChatPlatformErrorKind } from "../../src/ports/ChatPlatform.ts"
import { type OutboundRequest, outboundHttpOf } from "../../src/ports/OutboundHttp.ts"
import { FAKE_LIBRARY, type FakeGraph, graphError, startFakeGraph } from "../support/FakeGraph.ts"

const credentials: ChatappCredentials = {
  phoneNumberId: "1065550100",
  businessAccountId: "2065550100",
  accessToken: "EAAGsecretSystemUserToken0000000001"
}
/** A real 1×1 PNG. */
const PNG = Uint8Array.from(Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64"
))

const cleanups: Array<() => Promise<void>> = []
let fake: FakeGraph
let client: GuardedHttp
let graph: ChatPlatform["Service"]

const guarded = (allow: ReadonlyArray<string>) => {
  const made = makeGuardedHttp({ allow })
  cleanups.push(made.close)
  return made
}

beforeEach(async () => {
  fake = await startFakeGraph()
  cleanups.push(fake.close)
  client = guarded(["127.0.0.1/32"])
  graph = makeGraphChatPlatform({ baseUrl: fake.url, outbound: client, timeoutMs: 5_000 })
})
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const failure = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.flip(effect))
const text = { type: "text", text: { body: "Hello" } }

describe("sending a message", () => {
  it("POSTs the operator's body to /{phone_number_id}/messages with the token as Bearer, and reads the wamid and wa_id", async () => {
    const sent = await run(graph.sendMessage(credentials, "+1 (415) 555-0100", text))

    expect(sent).toEqual({ messageId: "wamid.FAKE000001", recipientWaId: "14155550100" })
    const [request] = fake.requests()
    expect(request).toMatchObject({ method: "POST", path: "/1065550100/messages" })
    expect(request!.headers.authorization).toBe(`Bearer ${credentials.accessToken}`)
    expect(request!.headers["content-type"]).toBe("application/json")
    expect(request!.json).toEqual({
      messaging_product: "whatsapp",
      recipient_type: "individual",
      to: "+1 (415) 555-0100",
      type: "text",
      text: { body: "Hello" }
    })
  })

  it("keeps messaging_product and to its own, whatever the message carries", async () => {
    await run(graph.sendMessage(credentials, "14155550100", { ...text, to: "19995550100", messaging_product: "other" }))
    expect(fake.requests()[0]!.json).toMatchObject({ messaging_product: "whatsapp", to: "14155550100" })
  })

  it("answers a null wa_id when the operator names no contact, and tolerates fields it does not know", async () => {
    fake.script("POST", "/{phone_number_id}/messages", {
      json: { messaging_product: "whatsapp", messages: [{ id: "wamid.X", message_status: "accepted" }], extra: { a: 1 } }
    })
    expect(await run(graph.sendMessage(credentials, "14155550100", text))).toEqual({ messageId: "wamid.X", recipientWaId: null })
  })

  it("escapes ids in the path and refuses dot segments and lone surrogates without sending anything", async () => {
    await run(graph.sendMessage({ ...credentials, phoneNumberId: "12/34?x#y" }, "14155550100", text))
    expect(fake.requests()[0]!.path).toBe("/12%2F34%3Fx%23y/messages")

    const error = await failure(graph.sendMessage({ ...credentials, phoneNumberId: ".." }, "14155550100", text))
    expect(error).toMatchObject({ kind: "other", code: null })
    // An id with a lone surrogate cannot be percent-encoded: refused as an error, never a crash.
    const lone = await failure(graph.fetchMedia(credentials, "pair split \ud83d", { maxBytes: 1000 }))
    expect(lone).toMatchObject({ kind: "other", code: null })
    expect(fake.requests()).toHaveLength(1)
  })
})

describe("the operator's error object, code by code", () => {
  const table: ReadonlyArray<readonly [ChatPlatformErrorKind, ReadonlyArray<number>]> = [
    ["rate_limited", [4, 17, 32, 80007, 130429]],
    ["pair_rate_limited", [131056]],
    ["transient", [1, 2, 131000, 131016, 131057]],
    ["auth", [0, 190, 10, 200, 250, 299]],
    ["policy", [368, 131031]],
    ["quality_restricted", [131048]],
    ["opted_out", [131050]],
    ["template", [132000, 132001, 132012, 132015, 132016]],
    ["other", [100, 199, 300, 131026, 131047, 131999, 132017, 133010]]
  ]
  const cases = table.flatMap(([kind, codes]) => codes.map((code) => [code, kind] as const))

  it.each(cases)("code %i is %s", async (code, kind) => {
    fake.script("POST", "/*/messages", graphError(400, { code, message: `(#${code}) refused` }))
    const error = await failure(graph.sendMessage(credentials, "14155550100", text))
    expect(error).toMatchObject({ _tag: "ChatPlatformError", kind, code, httpStatus: 400, message: `(#${code}) refused` })
    expect(error.retryable).toBe(kind === "rate_limited" || kind === "pair_rate_limited" || kind === "transient")
  })

  it("passes the subcode, the words meant for a person and the trace id through", async () => {
    fake.script("POST", "/*/messages", graphError(400, {
      code: 132001,
      error_subcode: 2494073,
      message: "(#132001) Template name does not exist in the translation",
      error_user_title: "Template not found",
      error_user_msg: "The template order_update_2 does not exist in en_US.",
      fbtrace_id: "AbCdEfGhIjK",
      error_data: { messaging_product: "whatsapp", details: "template name (order_update_2) does not exist in en_US" }
    }))
    expect(await failure(graph.sendMessage(credentials, "14155550100", text))).toMatchObject({
      kind: "template",
      code: 132001,
      subcode: 2494073,
      message: "(#132001) Template name does not exist in the translation",
      userTitle: "Template not found",
      userMessage: "The template order_update_2 does not exist in en_US.",
      fbtraceId: "AbCdEfGhIjK",
      httpStatus: 400
    })
  })

  it("reads is_transient: an unknown code becomes transient, a known one keeps its kind", async () => {
    fake.script(
      "POST",
      "/*/messages",
      graphError(500, { code: 131999, is_transient: true }),
      graphError(400, { code: 190, is_transient: true }),
      graphError(400, { code: 131999, is_transient: false })
    )
    const kinds = []
    for (let i = 0; i < 3; i++) kinds.push((await failure(graph.sendMessage(credentials, "14155550100", text))).kind)
    expect(kinds).toEqual(["transient", "auth", "other"])
  })

  it("takes error_data.details as the message when the message is missing, and nulls for absent fields", async () => {
    fake.script("POST", "/*/messages", { status: 400, json: { error: { code: 131026, error_data: { details: "Receiver is incapable" } } } })
    expect(await failure(graph.sendMessage(credentials, "14155550100", text))).toMatchObject({
      kind: "other",
      code: 131026,
      subcode: null,
      message: "Receiver is incapable",
      userTitle: null,
      userMessage: null,
      fbtraceId: null
    })
  })

  it("reads an error object that comes with a 200", async () => {
    fake.script("POST", "/*/messages", graphError(200, { code: 131056 }))
    expect(await failure(graph.sendMessage(credentials, "14155550100", text))).toMatchObject({ kind: "pair_rate_limited", httpStatus: 200 })
  })
})

describe("answers that are not the operator's", () => {
  it("a 502 page that is not JSON is transient, with no code", async () => {
    fake.script("POST", "/*/messages", { status: 502, body: "<html><body>Bad Gateway</body></html>" })
    const error = await failure(graph.sendMessage(credentials, "14155550100", text))
    expect(error).toMatchObject({ kind: "transient", code: null, subcode: null, httpStatus: 502 })
    expect(error.message).toContain("Bad Gateway")
  })

  it("a 400 or a 200 that is not JSON is other; a 429 without an error object is rate_limited", async () => {
    fake.script(
      "POST",
      "/*/messages",
      { status: 400, body: "nope" },
      { status: 200, body: "<html>maintenance</html>" },
      { status: 429, body: "" }
    )
    const errors = []
    for (let i = 0; i < 3; i++) errors.push(await failure(graph.sendMessage(credentials, "14155550100", text)))
    expect(errors.map((e) => [e.kind, e.code, e.httpStatus])).toEqual([["other", null, 400], ["other", null, 200], ["rate_limited", null, 429]])
  })

  it("JSON of another shape, or an error object of the wrong types, is other and never throws", async () => {
    fake.script(
      "POST",
      "/*/messages",
      { json: { messages: [] } },
      { json: [1, 2, 3] },
      { status: 400, json: { error: { code: "one hundred", message: 7 } } },
      { status: 400, json: { error: null } }
    )
    for (let i = 0; i < 4; i++) {
      expect(await failure(graph.sendMessage(credentials, "14155550100", text))).toMatchObject({ kind: "other", code: null })
    }
  })

  it("a redirect is an answer: not followed, and other", async () => {
    fake.script("GET", "/{phone_number_id}", { status: 302, headers: { location: `${fake.url}/elsewhere` } })
    expect(await failure(graph.phoneNumber(credentials))).toMatchObject({ kind: "other", code: null, httpStatus: 302 })
    expect(fake.requests().map((r) => r.path)).toEqual(["/1065550100"])
  })
})

describe("requests that get no answer are transient with no code", () => {
  it("a timeout", async () => {
    fake.script("POST", "/*/messages", { hang: true })
    const impatient = makeGraphChatPlatform({ baseUrl: fake.url, outbound: client, timeoutMs: 300 })
    const error = await failure(impatient.sendMessage(credentials, "14155550100", text))
    expect(error).toMatchObject({ kind: "transient", code: null, httpStatus: null, unanswered: true })
    expect(error.message).toContain("Timeout")
  })

  it("an answer cut off midway: the operator may have the message, so the send is unanswered, not refused", async () => {
    fake.script("POST", "/*/messages", { drop: true })
    const error = await failure(graph.sendMessage(credentials, "14155550100", text))
    expect(error).toMatchObject({ kind: "transient", code: null, httpStatus: null, unanswered: true })
    expect(fake.sends()).toHaveLength(1)
  })

  it("a refused connection (nothing listens on the port)", async () => {
    const closed = http.createServer()
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    const nowhere = makeGraphChatPlatform({ baseUrl: `http://127.0.0.1:${port}/v23.0`, outbound: client })
    const error = await failure(nowhere.phoneNumber(credentials))
    expect(error).toMatchObject({ kind: "transient", code: null, httpStatus: null })
    // It never left: nothing is in doubt.
    expect(error.unanswered).toBeUndefined()
  })

  it("an address the guard refuses, which never reaches the operator", async () => {
    const strict = makeGraphChatPlatform({ baseUrl: fake.url, outbound: guarded([]) })
    const error = await failure(strict.phoneNumber(credentials))
    expect(error).toMatchObject({ kind: "transient", code: null, httpStatus: null })
    expect(error.message).toContain("UrlNotAllowed")
    expect(error.unanswered).toBeUndefined()
    expect(fake.requests()).toEqual([])
  })
})

describe("templates of a business account", () => {
  it("creates with POST /{business_account_id}/message_templates, library inputs JSON-encoded as the operator takes them", async () => {
    const inputs = [{ type: "URL", url: { base_url: "https://shop.example/{{1}}", url_suffix_example: "https://shop.example/o/1" } }]
    const created = await run(graph.createTemplate(credentials, {
      name: "order_confirmation",
      language: "en_US",
      category: "UTILITY",
      library_template_name: "order_confirmation_1",
      library_template_button_inputs: inputs
    }))
    expect(created).toEqual({ id: "9100000000000001", status: "APPROVED", category: "UTILITY" })
    const [request] = fake.requests()
    expect(request).toMatchObject({ method: "POST", path: "/2065550100/message_templates" })
    expect(request!.headers.authorization).toBe(`Bearer ${credentials.accessToken}`)
    expect(request!.json).toEqual({
      name: "order_confirmation",
      language: "en_US",
      category: "UTILITY",
      library_template_name: "order_confirmation_1",
      library_template_button_inputs: JSON.stringify(inputs)
    })

    const already = "[{\"type\":\"PHONE_NUMBER\",\"phone_number\":\"+15555550100\"}]"
    await run(graph.createTemplate(credentials, { name: "b", language: "en_US", library_template_name: "x", library_template_button_inputs: already }))
    expect((fake.requests()[1]!.json as Record<string, unknown>).library_template_button_inputs).toBe(already)
  })

  it("lists one page with limit and after, and hands on the operator's JSON with its extra fields", async () => {
    for (const name of ["a", "b", "c"]) {
      await run(graph.createTemplate(credentials, { name, language: "en_US", category: "MARKETING", components: [{ type: "BODY", text: name }] }))
    }
    const first = await run(graph.listTemplates(credentials, { limit: 2 }))
    expect(first.items.map((t) => t.name)).toEqual(["a", "b"])
    expect(first.items[0]).toMatchObject({ status: "PENDING", category: "MARKETING", components: [{ type: "BODY", text: "a" }] })
    expect(first.after).not.toBeNull()
    const second = await run(graph.listTemplates(credentials, { limit: 2, after: first.after! }))
    expect(second).toEqual({ items: [expect.objectContaining({ name: "c" })], after: null })

    const lists = fake.requests().filter((r) => r.method === "GET")
    expect(lists.map((r) => [r.path, r.query])).toEqual([
      ["/2065550100/message_templates", { limit: "2" }],
      ["/2065550100/message_templates", { limit: "2", after: first.after }]
    ])
  })

  it("keeps fields the operator adds to a template, and drops nothing it sent", async () => {
    fake.script("GET", "/*/message_templates", {
      json: {
        data: [{ id: "1", name: "n", language: "en_US", status: "APPROVED", category: "UTILITY", components: [], quality_score: { score: "GREEN" } }],
        paging: { cursors: { before: "b", after: "a" } }
      }
    })
    const page = await run(graph.listTemplates(credentials, { limit: 10 }))
    expect(page).toEqual({
      items: [{ id: "1", name: "n", language: "en_US", status: "APPROVED", category: "UTILITY", components: [], quality_score: { score: "GREEN" } }],
      after: null
    })
  })
})

describe("browsing the template library", () => {
  it("reads every page, following the after cursor, with the filters as query parameters", async () => {
    const all = await run(graph.browseLibrary(credentials, {}))
    expect(all).toEqual(FAKE_LIBRARY)
    const pages = fake.requests()
    expect(pages).toHaveLength(2)
    expect(pages.map((r) => r.path)).toEqual(["/message_template_library", "/message_template_library"])
    expect(pages[0]!.query).toEqual({ limit: "500" })
    expect(pages[1]!.query).toEqual({ limit: "500", after: expect.any(String) })
    expect(pages[1]!.headers.authorization).toBe(`Bearer ${credentials.accessToken}`)
  })

  it("sends each filter given, and none that is not", async () => {
    const found = await run(graph.browseLibrary(credentials, { search: "ORDER", topic: "ORDER_MANAGEMENT", industry: "E_COMMERCE", language: "es_ES" }))
    expect(found.map((t) => [t.name, t.language])).toEqual([["order_confirmation_1", "es_ES"]])
    expect(fake.requests()[0]!.query).toEqual({ search: "ORDER", topic: "ORDER_MANAGEMENT", industry: "E_COMMERCE", language: "es_ES", limit: "500" })

    await run(graph.browseLibrary(credentials, { usecase: "VERIFICATION_CODE", name: "verification_code_1" }))
    expect(fake.requests()[1]!.query).toEqual({ usecase: "VERIFICATION_CODE", name: "verification_code_1", limit: "500" })
  })

  it("takes the cursor from paging.next when paging.cursors has none, and null header fields as absent", async () => {
    fake.script(
      "GET",
      "/message_template_library",
      { json: { data: [{ name: "a", language: "en_US", category: "UTILITY", body: "A", header: null }], paging: { next: `${fake.url}/message_template_library?after=CUR2` } } },
      { json: { data: [{ name: "b", language: "en_US", category: "UTILITY", body: "B" }], paging: { cursors: { before: "x", after: "y" } } } }
    )
    const all = await run(graph.browseLibrary(credentials, {}))
    expect(all).toEqual([{ name: "a", language: "en_US", category: "UTILITY", body: "A" }, { name: "b", language: "en_US", category: "UTILITY", body: "B" }])
    expect(fake.requests()[1]!.query).toEqual({ limit: "500", after: "CUR2" })
  })

  it("stops at 100 pages, and at a cursor it has already followed", async () => {
    // Every page says there is another; the adapter stops by itself.
    const endless = Array.from({ length: 100 }, (_, i) => ({
      json: { data: [{ name: `t${i}`, language: "en_US", category: "UTILITY", body: "x" }], paging: { cursors: { after: `c${i}` }, next: "more" } }
    }))
    fake.script("GET", "/message_template_library", ...endless)
    expect(await run(graph.browseLibrary(credentials, {}))).toHaveLength(100)
    expect(fake.requests()).toHaveLength(100)

    const looping = { json: { data: [], paging: { cursors: { after: "same" }, next: "more" } } }
    fake.script("GET", "/message_template_library", looping, looping, looping)
    await run(graph.browseLibrary(credentials, {}))
    expect(fake.requests()).toHaveLength(102)
  })

  it("fails the whole browse on an entry without the fields every entry has", async () => {
    fake.script("GET", "/message_template_library", { json: { data: [{ name: "a", language: "en_US" }] } })
    expect(await failure(graph.browseLibrary(credentials, {}))).toMatchObject({ kind: "other", httpStatus: 200 })
  })
})

describe("the phone number", () => {
  it("GETs /{phone_number_id} asking for the limit tier, quality rating, status, throughput and names", async () => {
    expect(await run(graph.phoneNumber(credentials))).toEqual({
      id: "1065550100",
      displayPhoneNumber: "+1 555-555-0100",
      verifiedName: "Fake Business",
      messagingLimitTier: "TIER_1K",
      qualityRating: "GREEN",
      status: "CONNECTED",
      throughputLevel: "STANDARD"
    })
    const [request] = fake.requests()
    expect(request).toMatchObject({ method: "GET", path: "/1065550100" })
    expect(request!.query.fields!.split(",").sort()).toEqual(
      ["display_phone_number", "id", "messaging_limit_tier", "quality_rating", "status", "throughput", "verified_name"]
    )
  })

  it("answers null for what the operator leaves out or writes as null", async () => {
    fake.script("GET", "/{id}", { json: { id: "1065550100", quality_rating: null } })
    expect(await run(graph.phoneNumber(credentials))).toEqual({
      id: "1065550100",
      displayPhoneNumber: null,
      verifiedName: null,
      messagingLimitTier: null,
      qualityRating: null,
      status: null,
      throughputLevel: null
    })
  })

  it("an invalid token is auth, as the operator's 190 says", async () => {
    const picky = await startFakeGraph({ accessToken: "the-only-good-token-000000" })
    cleanups.push(picky.close)
    const other = makeGraphChatPlatform({ baseUrl: picky.url, outbound: client })
    expect(await failure(other.phoneNumber(credentials))).toMatchObject({ kind: "auth", code: 190, httpStatus: 401 })
  })
})

describe("fetching media", () => {
  it("GETs the media object, then its URL with the same Bearer, and hands over the bytes, type and sha256", async () => {
    fake.media("4490709327384033", { bytes: PNG, mimeType: "image/png" })
    const media = await run(graph.fetchMedia(credentials, "4490709327384033", { maxBytes: 1024 }))

    expect(media.bytes).toEqual(PNG)
    expect(media.mimeType).toBe("image/png")
    expect(media.sha256).toBe(createHash("sha256").update(PNG).digest("hex"))
    const requests = fake.requests()
    expect(requests.map((r) => [r.method, r.path])).toEqual([["GET", "/4490709327384033"], ["GET", "/media-download/4490709327384033"]])
    expect(requests.every((r) => r.headers.authorization === `Bearer ${credentials.accessToken}`)).toBe(true)
  })

  it("asks for a fresh URL once when the first has expired", async () => {
    fake.media("m1", { bytes: PNG, mimeType: "image/png", expireFirstUrl: true })
    const media = await run(graph.fetchMedia(credentials, "m1", { maxBytes: 1024 }))

    expect(media.bytes).toEqual(PNG)
    expect(fake.requests().map((r) => `${r.path}${r.query.token === undefined ? "" : `?token=${r.query.token}`}`)).toEqual([
      "/m1",
      "/media-download/m1?token=t1",
      "/m1",
      "/media-download/m1?token=t2"
    ])
  })

  it("gives up after the second URL fails too", async () => {
    fake.media("m2", { bytes: PNG, mimeType: "image/png" })
    fake.script("GET", "/media-download/m2", { status: 410, body: "gone" }, { status: 403, body: "forbidden" })
    const error = await failure(graph.fetchMedia(credentials, "m2", { maxBytes: 1024 }))
    expect(error).toMatchObject({ kind: "other", code: null, httpStatus: 403 })
    expect(fake.requests().filter((r) => r.path === "/m2")).toHaveLength(2)
  })

  it("does not retry a download that failed otherwise", async () => {
    fake.media("m3", { bytes: PNG, mimeType: "image/png" })
    fake.script("GET", "/media-download/m3", { status: 503, body: "busy" })
    expect(await failure(graph.fetchMedia(credentials, "m3", { maxBytes: 1024 }))).toMatchObject({ kind: "transient", httpStatus: 503 })
    expect(fake.requests()).toHaveLength(2)
  })

  it("refuses a file the operator says is over maxBytes without downloading it", async () => {
    fake.media("big", { bytes: PNG, mimeType: "image/png", fileSize: 10_000_000 })
    const error = await failure(graph.fetchMedia(credentials, "big", { maxBytes: 5_000_000 }))
    expect(error).toMatchObject({ kind: "other", code: null })
    expect(error.message).toContain("10000000")
    expect(fake.requests().map((r) => r.path)).toEqual(["/big"])
  })

  it("refuses a download longer than maxBytes when the operator's file_size understated it", async () => {
    fake.media("liar", { bytes: new Uint8Array(4096).fill(7), mimeType: "image/png", fileSize: 10 })
    const error = await failure(graph.fetchMedia(credentials, "liar", { maxBytes: 1000 }))
    expect(error).toMatchObject({ kind: "other", code: null })
    expect(error.message).toContain("1000")
  })

  it("does not follow a redirect from the media URL", async () => {
    fake.media("moved", { bytes: PNG, mimeType: "image/png" })
    fake.script("GET", "/media-download/moved", { status: 302, headers: { location: `${fake.origin}/media-download/moved?token=t1` } })
    expect(await failure(graph.fetchMedia(credentials, "moved", { maxBytes: 1024 }))).toMatchObject({ kind: "other", httpStatus: 302 })
    expect(fake.requests()).toHaveLength(2)
  })

  it("passes the operator's refusal of the media object on", async () => {
    expect(await failure(graph.fetchMedia(credentials, "unknown-media", { maxBytes: 1024 }))).toMatchObject({
      kind: "other",
      code: 100,
      subcode: 33,
      httpStatus: 400
    })
  })

  it("never sends the token to a media URL in clear text when the operator is reached over https", async () => {
    const seen: Array<OutboundRequest> = []
    const stub = outboundHttpOf({
      request: (request) => {
        seen.push(request)
        const body = new TextEncoder().encode(JSON.stringify({ url: "http://media.example/file", mime_type: "image/png" }))
        return Effect.succeed({ status: 200, headers: {}, body, timeMs: 1 })
      }
    })
    const secure = makeGraphChatPlatform({ baseUrl: "https://graph.example/v23.0/", outbound: stub })
    expect(await failure(secure.fetchMedia(credentials, "m", { maxBytes: 1024 }))).toMatchObject({ kind: "other" })
    expect(seen.map((r) => r.url)).toEqual(["https://graph.example/v23.0/m"])
  })
})

describe("uploading media", () => {
  it("POSTs multipart to /{phone_number_id}/media with messaging_product, type and the file, and reads the media id", async () => {
    const uploaded = await run(graph.uploadMedia(credentials, { bytes: PNG, mimeType: "image/png", filename: "receipt.png" }))

    const [upload] = fake.uploads()
    expect(uploaded).toEqual({ id: upload!.id })
    expect(upload).toMatchObject({
      phoneNumberId: "1065550100",
      fields: { messaging_product: "whatsapp", type: "image/png" },
      filename: "receipt.png",
      contentType: "image/png"
    })
    expect(upload!.bytes).toEqual(PNG)
    const [request] = fake.requests()
    expect(request).toMatchObject({ method: "POST", path: "/1065550100/media" })
    expect(request!.headers.authorization).toBe(`Bearer ${credentials.accessToken}`)
    expect(request!.headers["content-type"]).toMatch(/^multipart\/form-data; boundary=omnichannel-[0-9a-f]{32}$/)
    // The operator serves the file back by that id.
    expect((await run(graph.fetchMedia(credentials, upload!.id, { maxBytes: 1024 }))).bytes).toEqual(PNG)
  })

  it("keeps a file name's quotes and line breaks out of the part's headers", async () => {
    await run(graph.uploadMedia(credentials, { bytes: PNG, mimeType: "image/png", filename: "a\"b\r\nX-Evil: 1.png" }))
    const [upload] = fake.uploads()
    expect(upload!.filename).toBe("a%22b%0D%0AX-Evil: 1.png")
    expect(upload!.bytes).toEqual(PNG)
  })

  it("passes the operator's refusal of an upload on, read from its error object", async () => {
    fake.script("POST", "/{phone_number_id}/media", graphError(400, {
      code: 131053,
      message: "(#131053) Media upload error",
      error_user_msg: "Unsupported file type application/x-msdownload"
    }))
    expect(await failure(graph.uploadMedia(credentials, { bytes: PNG, mimeType: "application/x-msdownload", filename: "a.exe" }))).toMatchObject({
      kind: "other",
      code: 131053,
      userMessage: "Unsupported file type application/x-msdownload",
      httpStatus: 400
    })
    fake.script("POST", "/{phone_number_id}/media", { json: { success: true } })
    expect(await failure(graph.uploadMedia(credentials, { bytes: PNG, mimeType: "image/png", filename: "a.png" }))).toMatchObject({ kind: "other" })
  })
})
