import { createHash } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** A request as the fake operator saw it. */
export interface FakeGraphRequest {
  readonly method: string
  /**
   * The path under the version, as sent (still percent-encoded): `/1065550100/messages`; a path
   * outside the version keeps its whole form: `/media-download/…`.
   */
  readonly path: string
  readonly query: Readonly<Record<string, string>>
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** The body's bytes as sent (a media upload's file is binary). */
  readonly raw: Buffer
  /** The body parsed as JSON; undefined when it is not JSON. */
  readonly json: unknown
}

/** A media upload (`POST /{phone_number_id}/media`) the fake took, its multipart fields read. */
export interface FakeUpload {
  /** The media id the fake answered; `GET /{id}` serves the file back. */
  readonly id: string
  readonly phoneNumberId: string
  /** The `messaging_product` and `type` fields. */
  readonly fields: Readonly<Record<string, string>>
  /** The `file` part: its name, `Content-Type` and bytes. */
  readonly filename: string | null
  readonly contentType: string | null
  readonly bytes: Uint8Array
}

/** One scripted answer. */
export interface FakeAnswer {
  /** 200 unless given. */
  readonly status?: number
  /** Sent as `application/json`. */
  readonly json?: unknown
  /** Sent as it is, instead of `json` (`text/html` unless `headers` say otherwise). */
  readonly body?: string | Uint8Array
  readonly headers?: Readonly<Record<string, string>>
  /** Never answers: the client's timeout ends the exchange. */
  readonly hang?: boolean
  /**
   * Takes the request as the fake does unscripted (a send gets its message id, see `sends`), then
   * starts its answer and closes the connection midway: an answer lost on its way back.
   */
  readonly drop?: boolean
  /** Answers as the fake does unscripted (a scripted answer that lets one request through). */
  readonly unscripted?: boolean
  /**
   * Answers only once this settles (the request is recorded on arrival): an operator answer held
   * for exactly as long as a test needs, so something else can happen while the call is in flight.
   */
  readonly after?: Promise<unknown>
}

/** A send the fake accepted (answered with a message id), whether or not its answer reached the sender. */
export interface FakeSent {
  readonly phoneNumberId: string
  /** The recipient's digits. */
  readonly to: string
  /** The message id the fake answered (`wamid.FAKE…`). */
  readonly wamid: string
  /** The send's `biz_opaque_callback_data`, which the operator echoes in each of its statuses; null when none. */
  readonly callbackData: string | null
}

/**
 * The webhook payload the operator posts for `sends`' statuses (`sent`, `delivered` or `read`), one
 * change per number, each status as the operator writes it (with the send's callback data when it had one).
 */
export const statusesPayload = (
  businessAccountId: string,
  sends: ReadonlyArray<FakeSent>,
  status: "sent" | "delivered" | "read",
  timestamp: number
) => {
  const byNumber = new Map<string, Array<FakeSent>>()
  for (const sent of sends) byNumber.set(sent.phoneNumberId, [...(byNumber.get(sent.phoneNumberId) ?? []), sent])
  return {
    object: "whatsapp_business_account",
    entry: [{
      id: businessAccountId,
      changes: [...byNumber].map(([phoneNumberId, ofNumber]) => ({
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15550001000", phone_number_id: phoneNumberId },
          statuses: ofNumber.map((sent) => ({
            id: sent.wamid,
            status,
            timestamp: String(timestamp),
            recipient_id: sent.to,
            ...(sent.callbackData === null ? {} : { biz_opaque_callback_data: sent.callbackData }),
            pricing: { billable: true, pricing_model: "PMP", category: "utility", type: "regular" }
          }))
        }
      }))
    }]
  }
}

/** A media object the fake serves: `GET /{id}` hands out a fresh download URL each time. */
export interface FakeMedia {
  readonly bytes: Uint8Array
  readonly mimeType: string
  /** The first URL handed out answers 404 (expired); later ones work. */
  readonly expireFirstUrl?: boolean
  /** The `file_size` the media object reports; the true size unless given. */
  readonly fileSize?: number
}

/**
 * What the fake says of a phone number (`GET /{phone_number_id}`), in the operator's field names; null
 * leaves the field out of the answer (the operator not reporting it).
 */
export interface FakeNumber {
  readonly messaging_limit_tier?: string | null
  readonly quality_rating?: string | null
  readonly status?: string | null
  /** `throughput.level`: `STANDARD` unless set. */
  readonly throughput_level?: string | null
}

/** How the fake starts. */
export interface FakeGraphOptions {
  /** The Graph version in the path; `v23.0` unless given. */
  readonly version?: string
  /** The only Bearer token accepted; any non-empty one when not given. */
  readonly accessToken?: string
  /** The catalog `GET /message_template_library` serves; `FAKE_LIBRARY` unless given. */
  readonly library?: ReadonlyArray<Readonly<Record<string, unknown>>>
  /** Library entries per page; 2 unless given. */
  readonly libraryPageSize?: number
  /**
   * Milliseconds every `POST /{phone_number_id}/messages` waits before it is answered (it is recorded
   * on arrival): a slow operator, so sends are in flight long enough to be interrupted. 0 unless given.
   */
  readonly messageDelayMs?: number
}

/** A fake of the operator's Graph API on 127.0.0.1, speaking its wire format. */
export interface FakeGraph {
  /** `http://127.0.0.1:<port>/v23.0`: the base URL to hand the Graph adapter. */
  readonly url: string
  /** `http://127.0.0.1:<port>` */
  readonly origin: string
  /** Every request received so far, in order, scripted or not. */
  readonly requests: () => ReadonlyArray<FakeGraphRequest>
  /**
   * Queues answers for requests of `method` whose path (under the version) matches `path`: a string
   * where `*` or `{name}` stands for one segment (`/{phone_number_id}/messages`), or a RegExp. Each
   * matching request takes the next answer; once they are used up the defaults answer again.
   */
  readonly script: (method: "GET" | "POST", path: string | RegExp, ...answers: ReadonlyArray<FakeAnswer>) => void
  /**
   * Queues answers for the sends (`POST /{phone_number_id}/messages`, any number) whose `to` is the
   * phone `to` (compared by digits: `+4477…` and `4477…` are one recipient). Each such send takes the
   * next answer before any `script` answer; once they are used up the others answer again.
   */
  readonly scriptRecipient: (to: string, ...answers: ReadonlyArray<FakeAnswer>) => void
  /** Serves `id` as a media object and its bytes at `/media-download/{id}?token=…`. */
  readonly media: (id: string, media: FakeMedia) => void
  /** Sets what `GET /{id}` says of phone number `id` from now on (merged over earlier settings). */
  readonly number: (id: string, number: FakeNumber) => void
  /** Every media upload the fake took (answered with an id), in order. */
  readonly uploads: () => ReadonlyArray<FakeUpload>
  /** Every send the fake accepted, in order of arrival, answered or not (the sender may be gone). */
  readonly sends: () => ReadonlyArray<FakeSent>
  /** How many `GET /message_template_library` requests arrived so far (pages included, scripted or not). */
  readonly libraryCalls: () => number
  readonly close: () => Promise<void>
}

/** The operator's error object as an answer: `{ error: { message, type, code, fbtrace_id, …fields } }`. */
export const graphError = (
  status: number,
  error: {
    readonly code: number
    readonly message?: string
    readonly type?: string
    readonly error_subcode?: number
    readonly error_user_title?: string
    readonly error_user_msg?: string
    readonly fbtrace_id?: string
    readonly is_transient?: boolean
    readonly error_data?: { readonly messaging_product?: string; readonly details?: string }
  }
): FakeAnswer => ({
  status,
  json: {
    error: {
      message: `(#${error.code}) Fake error`,
      type: "OAuthException",
      fbtrace_id: "AFakeTraceId0000000001",
      ...error
    }
  }
})

/** The library the fake serves by default, two entries a page. */
export const FAKE_LIBRARY: ReadonlyArray<Readonly<Record<string, unknown>>> = [
  {
    name: "order_confirmation_1",
    language: "en_US",
    category: "UTILITY",
    topic: "ORDER_MANAGEMENT",
    usecase: "ORDER_CONFIRMATION",
    industry: ["E_COMMERCE"],
    header: "Order confirmed",
    body: "Hi {{1}}, thank you for your order {{2}}.",
    body_params: ["Maria", "#12345"],
    body_param_types: ["TEXT", "TEXT"],
    buttons: [{ type: "URL", text: "View order", url: "https://www.example.com/{{1}}" }],
    id: "7100000000000001"
  },
  {
    name: "order_confirmation_1",
    language: "es_ES",
    category: "UTILITY",
    topic: "ORDER_MANAGEMENT",
    usecase: "ORDER_CONFIRMATION",
    industry: ["E_COMMERCE"],
    header: "Pedido confirmado",
    body: "Hola, {{1}}: gracias por tu pedido {{2}}.",
    body_params: ["María", "#12345"],
    buttons: [{ type: "URL", text: "Ver pedido", url: "https://www.example.com/{{1}}" }],
    id: "7100000000000002"
  },
  {
    name: "verification_code_1",
    language: "en_US",
    category: "AUTHENTICATION",
    topic: "SECURITY",
    usecase: "VERIFICATION_CODE",
    industry: ["FINANCIAL_SERVICES", "E_COMMERCE"],
    body: "{{1}} is your verification code.",
    body_params: ["123456"],
    buttons: [{ type: "OTP", text: "Copy code", otp_type: "COPY_CODE" }],
    id: "7100000000000003"
  }
]
const LIBRARY_PAGE_SIZE = 2

/**
 * The operator's library filtering as the fake plays it: `search` in name or body, any case; the
 * other filters exact (`industry`: one of the entry's).
 */
export const libraryEntryMatches = (
  entry: Readonly<Record<string, unknown>>,
  query: Readonly<Partial<Record<"search" | "topic" | "usecase" | "industry" | "language" | "name", string>>>
): boolean => {
  const { search, topic, usecase, industry, language, name } = query
  return (search === undefined || `${entry.name} ${entry.body}`.toLowerCase().includes(search.toLowerCase())) &&
    (topic === undefined || entry.topic === topic) &&
    (usecase === undefined || entry.usecase === usecase) &&
    (industry === undefined || (Array.isArray(entry.industry) && entry.industry.includes(industry))) &&
    (language === undefined || entry.language === language) &&
    (name === undefined || entry.name === name)
}

const patternOf = (path: string | RegExp): RegExp =>
  typeof path !== "string"
    ? path
    : new RegExp(`^${path.split("/").map((segment) =>
      segment === "*" || /^\{\w+\}$/.test(segment) ? "[^/]+" : segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
    ).join("/")}$`)

/** The parts of a `multipart/form-data` body: each part's headers (lower-cased names) and bytes. */
export const multipartParts = (contentType: string | undefined, raw: Buffer) => {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType ?? "")
  if (boundary === null) return undefined
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`)
  const parts: Array<{ readonly headers: Record<string, string>; readonly body: Buffer }> = []
  let at = raw.indexOf(delimiter)
  while (at !== -1) {
    const start = at + delimiter.length
    if (raw.subarray(start, start + 2).toString() === "--") return parts
    const next = raw.indexOf(delimiter, start)
    if (next === -1) return undefined
    const part = raw.subarray(start + 2, next - 2)
    const split = part.indexOf("\r\n\r\n")
    if (split === -1) return undefined
    const headers: Record<string, string> = {}
    for (const line of part.subarray(0, split).toString("utf8").split("\r\n")) {
      const colon = line.indexOf(":")
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    parts.push({ headers, body: part.subarray(split + 4) })
    at = next
  }
  return undefined
}

const cursorOf = (offset: number) => Buffer.from(`fake:${offset}`).toString("base64url")
const offsetOf = (cursor: string | undefined) =>
  cursor === undefined ? 0 : Number(/^fake:(\d+)$/.exec(Buffer.from(cursor, "base64url").toString())?.[1] ?? 0)

/**
 * Starts the fake operator on 127.0.0.1 with a free port. By default it answers as the operator
 * would: sends get a `wamid.`, phone numbers are `TIER_1K`/`GREEN`/`CONNECTED`, templates are kept
 * per business account (a library template `APPROVED`, others `PENDING`), the library (`FAKE_LIBRARY`
 * unless `library` is given) comes two entries a page (`libraryPageSize`), media objects point at the
 * fake's own download path. A request without a Bearer token (or with another than `accessToken`, when
 * given) gets the operator's 190 error.
 */
export const startFakeGraph = async (options: FakeGraphOptions = {}): Promise<FakeGraph> => {
  const version = `/${options.version ?? "v23.0"}`
  const library = options.library ?? FAKE_LIBRARY
  const libraryPageSize = options.libraryPageSize ?? LIBRARY_PAGE_SIZE
  const numbers = new Map<string, FakeNumber>()
  let libraryCalls = 0
  const seen: Array<FakeGraphRequest> = []
  const scripts: Array<{ readonly method: string; readonly pattern: RegExp; readonly answers: Array<FakeAnswer> }> = []
  const mediaById = new Map<string, FakeMedia & { issued: number; readonly valid: Set<string> }>()
  const templates = new Map<string, Array<Record<string, unknown>>>()
  const byRecipient = new Map<string, Array<FakeAnswer>>()
  const uploads: Array<FakeUpload> = []
  const digitsOf = (value: unknown) => String(value ?? "").replace(/\D/g, "")
  const isSend = (request: FakeGraphRequest) => request.method === "POST" && /^\/[^/]+\/messages$/.test(request.path)
  const accepted: Array<FakeSent> = []
  let origin = ""

  const defaultAnswer = (request: FakeGraphRequest): FakeAnswer => {
    const auth = request.headers.authorization
    const token = auth?.startsWith("Bearer ") ? auth.slice(7) : ""
    if (token === "" || (options.accessToken !== undefined && token !== options.accessToken)) {
      return graphError(401, { code: 190, message: "Invalid OAuth access token - Cannot parse access token" })
    }
    const segments = request.path.split("/").slice(1).map(decodeURIComponent)
    const [first, second] = segments

    if (first === "media-download" && second !== undefined) {
      const media = mediaById.get(second)
      if (media === undefined || !media.valid.has(request.query.token ?? "")) {
        return { status: 404, body: "Not Found", headers: { "content-type": "text/plain" } }
      }
      return { body: media.bytes, headers: { "content-type": media.mimeType } }
    }
    if (request.method === "GET" && first === "message_template_library" && segments.length === 1) {
      const matching = library.filter((entry) => libraryEntryMatches(entry, request.query))
      return { json: page(matching, offsetOf(request.query.after), libraryPageSize, request) }
    }
    if (first !== undefined && second === "media" && segments.length === 2 && request.method === "POST") {
      const parts = multipartParts(request.headers["content-type"], request.raw)
      const fields: Record<string, string> = {}
      let file: { readonly headers: Record<string, string>; readonly body: Buffer } | undefined
      for (const part of parts ?? []) {
        const name = /name="([^"]*)"/.exec(part.headers["content-disposition"] ?? "")?.[1]
        if (name === "file") file = part
        else if (name !== undefined) fields[name] = part.body.toString("utf8")
      }
      if (parts === undefined || file === undefined || fields.messaging_product !== "whatsapp" || fields.type === undefined) {
        return graphError(400, {
          code: 100,
          message: "(#100) The parameter messaging_product, file and type are required and the body must be multipart/form-data"
        })
      }
      const id = `93000000${String(uploads.length + 1).padStart(6, "0")}`
      const contentType = file.headers["content-type"] ?? null
      const bytes = new Uint8Array(file.body)
      uploads.push({
        id,
        phoneNumberId: first,
        fields,
        filename: /filename="([^"]*)"/.exec(file.headers["content-disposition"] ?? "")?.[1] ?? null,
        contentType,
        bytes
      })
      mediaById.set(id, { bytes, mimeType: fields.type, issued: 0, valid: new Set() })
      return { json: { id } }
    }
    if (first !== undefined && second === "messages" && request.method === "POST") {
      const body = (request.json ?? {}) as { to?: unknown; biz_opaque_callback_data?: unknown }
      const to = String(body.to ?? "")
      const wamid = `wamid.FAKE${String(accepted.length + 1).padStart(6, "0")}`
      const callbackData = typeof body.biz_opaque_callback_data === "string" ? body.biz_opaque_callback_data : null
      accepted.push({ phoneNumberId: first, to: digitsOf(to), wamid, callbackData })
      return {
        json: {
          messaging_product: "whatsapp",
          contacts: [{ input: to, wa_id: to.replace(/\D/g, "") }],
          messages: [{ id: wamid }]
        }
      }
    }
    if (first !== undefined && second === "message_templates") {
      const account = templates.get(first) ?? []
      if (request.method === "POST") {
        const body = (request.json ?? {}) as Record<string, unknown>
        const id = `91000000000${String(account.length + 1).padStart(5, "0")}`
        const status = body.library_template_name === undefined ? "PENDING" : "APPROVED"
        const category = typeof body.category === "string" ? body.category : "UTILITY"
        templates.set(first, [...account, { id, status, category, components: [], ...body }])
        return { json: { id, status, category } }
      }
      return { json: page(account, offsetOf(request.query.after), Number(request.query.limit ?? 25), request) }
    }
    if (request.method === "GET" && first !== undefined && segments.length === 1) {
      const media = mediaById.get(first)
      if (media !== undefined) {
        media.issued += 1
        const token = `t${media.issued}`
        if (!(media.expireFirstUrl === true && media.issued === 1)) media.valid.add(token)
        return {
          json: {
            messaging_product: "whatsapp",
            url: `${origin}/media-download/${encodeURIComponent(first)}?token=${token}`,
            mime_type: media.mimeType,
            sha256: createHash("sha256").update(media.bytes).digest("hex"),
            file_size: media.fileSize ?? media.bytes.length,
            id: first
          }
        }
      }
      if (/^\d+$/.test(first)) {
        const set = numbers.get(first) ?? {}
        // Undefined fields are left out of the JSON: null means "not reported".
        const reported = (value: string | null | undefined, fallback: string) => (value === null ? undefined : value ?? fallback)
        const level = reported(set.throughput_level, "STANDARD")
        return {
          json: {
            id: first,
            display_phone_number: `+1 555-${first.slice(-7, -4).padStart(3, "0")}-${first.slice(-4).padStart(4, "0")}`,
            verified_name: "Fake Business",
            messaging_limit_tier: reported(set.messaging_limit_tier, "TIER_1K"),
            quality_rating: reported(set.quality_rating, "GREEN"),
            status: reported(set.status, "CONNECTED"),
            throughput: level === undefined ? undefined : { level }
          }
        }
      }
    }
    return graphError(400, {
      code: 100,
      error_subcode: 33,
      message: `Unsupported ${request.method.toLowerCase()} request. Object with ID '${first ?? ""}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`
    })
  }

  /** One Graph page of `items` from `offset`, with `paging.next` while more remain. */
  const page = (items: ReadonlyArray<unknown>, offset: number, size: number, request: FakeGraphRequest) => {
    const end = offset + Math.max(1, size)
    const more = end < items.length
    const next = new URL(`${origin}${version}${request.path}`)
    for (const [key, value] of Object.entries(request.query)) next.searchParams.set(key, value)
    next.searchParams.set("after", cursorOf(end))
    return {
      data: items.slice(offset, end),
      paging: {
        cursors: { before: cursorOf(offset), after: cursorOf(end) },
        ...(more ? { next: next.toString() } : {})
      }
    }
  }

  const server = http.createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake")
      const pathname = (req.url ?? "/").split("?")[0]!
      const raw = Buffer.concat(chunks)
      const body = raw.toString("utf8")
      let json: unknown
      try {
        json = body === "" ? undefined : JSON.parse(body)
      } catch {
        json = undefined
      }
      const request: FakeGraphRequest = {
        method: req.method ?? "",
        path: pathname.startsWith(`${version}/`) ? pathname.slice(version.length) : pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        body,
        raw,
        json
      }
      seen.push(request)
      if (request.method === "GET" && request.path === "/message_template_library") libraryCalls += 1
      const forRecipient = isSend(request) ? byRecipient.get(digitsOf((request.json as { to?: unknown } | undefined)?.to)) : undefined
      const scripted = scripts.find((s) => s.method === request.method && s.answers.length > 0 && s.pattern.test(request.path))
      const picked = forRecipient?.shift() ?? scripted?.answers.shift()
      const answer = picked === undefined || picked.unscripted === true ? defaultAnswer(request) : picked
      if (answer.hang === true) return
      if (answer.drop === true) {
        const whole = JSON.stringify(defaultAnswer(request).json ?? {})
        res.writeHead(200, { "content-type": "application/json; charset=UTF-8", "content-length": String(Buffer.byteLength(whole)) })
        res.write(whole.slice(0, 10), () => res.destroy())
        return
      }
      if (answer.after !== undefined) {
        void answer.after.then(() => {
          if (!res.destroyed) respond(answer)
        })
        return
      }
      const delay = isSend(request) ? options.messageDelayMs ?? 0 : 0
      if (delay > 0) {
        setTimeout(() => {
          if (!res.destroyed) respond(answer)
        }, delay)
        return
      }
      respond(answer)
    })
    const respond = (answer: FakeAnswer) => {
      const payload = answer.json !== undefined ? JSON.stringify(answer.json) : answer.body ?? ""
      res.writeHead(answer.status ?? 200, {
        "content-type": answer.json !== undefined ? "application/json; charset=UTF-8" : "text/html; charset=UTF-8",
        ...answer.headers
      })
      res.end(payload)
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`

  return {
    url: `${origin}${version}`,
    origin,
    requests: () => [...seen],
    script: (method, path, ...answers) => {
      scripts.push({ method, pattern: patternOf(path), answers: [...answers] })
    },
    scriptRecipient: (to, ...answers) => {
      const key = digitsOf(to)
      byRecipient.set(key, [...(byRecipient.get(key) ?? []), ...answers])
    },
    media: (id, media) => {
      mediaById.set(id, { ...media, issued: 0, valid: new Set() })
    },
    number: (id, number) => {
      numbers.set(id, { ...numbers.get(id), ...number })
    },
    uploads: () => [...uploads],
    sends: () => [...accepted],
    libraryCalls: () => libraryCalls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        // Hanging answers and kept-alive connections would keep `close` waiting.
        server.closeAllConnections()
      })
  }
}
