import { Clock, Effect, Option } from "effect"
import { observeRequest, type RequestFacts } from "../http/RequestTelemetry.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import { AttachmentService } from "./AttachmentService.ts"
import { DownloadLinks } from "./DownloadLinks.ts"

// Answers other than the file: JSON like the API's errors, never cached, never sniffed.
const answer = (status: number, detail: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ detail }), {
    status,
    headers: {
      "content-type": "application/json",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      ...headers
    }
  })

// RFC 6266: a plain-ASCII `filename` for old clients, and the exact name as RFC 8187 `filename*`.
const contentDisposition = (filename: string) => {
  const ascii = filename.normalize("NFKD").replace(/[\u0300-\u036f]/g, "").replace(/[^\x20-\x7e]|["\\%]/g, "_")
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`
}

const fileHeaders = (record: AttachmentRecord, maxAge: number): Record<string, string> => ({
  "content-type": record.content_type,
  "content-length": String(record.file_size),
  "content-disposition": contentDisposition(record.filename),
  // The bytes were checked, but the browser must still never guess, run or frame them.
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; sandbox",
  "cache-control": `private, max-age=${maxAge}`,
  "referrer-policy": "no-referrer"
})

/**
 * The handler for download links (`DownloadLinks`): GET or HEAD with a valid, unexpired link
 * answers the attachment's bytes as a download; a bad or expired link 403, an attachment that is
 * gone 404. It is served by the host outside `/api/v1` and takes no API key.
 */
export const makeFileDownloadHandler = Effect.gen(function*() {
  const context = yield* Effect.context<AttachmentService | DownloadLinks>()
  const service = yield* AttachmentService
  const links = yield* DownloadLinks

  const handle = (request: Request, facts: RequestFacts): Effect.Effect<Response> => {
    if (request.method !== "GET" && request.method !== "HEAD") {
      return Effect.succeed(answer(405, "Method not allowed", { allow: "GET, HEAD" }))
    }
    return Effect.gen(function*() {
      const target = yield* links.verify(new URL(request.url))
      if (Option.isNone(target)) return answer(403, "This download link is invalid or has expired")
      const { tenantId, attachmentId, expiresAt } = target.value
      facts.tenantId = tenantId
      const opened = yield* service.open(tenantId, attachmentId)
      if (Option.isNone(opened)) return answer(404, "This file no longer exists")
      const { record, stream } = opened.value
      const nowSeconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const headers = fileHeaders(record, Math.max(0, expiresAt - nowSeconds))
      if (request.method === "HEAD") {
        yield* Effect.promise(() => stream.cancel())
        return new Response(null, { status: 200, headers })
      }
      return new Response(stream, { status: 200, headers })
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.as(Effect.logError("file download failed", cause), answer(500, "Internal server error"))
      )
    )
  }

  // The route template names the link's path without the attachment id (its query holds the signature).
  return (request: Request): Promise<Response> =>
    Effect.runPromiseWith(context)(
      observeRequest(request, new URL(request.url).pathname.replace(/\/[^/]*$/, "/{attachment_id}"), (facts) => handle(request, facts))
    )
})
