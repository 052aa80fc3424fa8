import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId, UuidId } from "../kernel/Id.ts"
import { AttachmentService } from "./AttachmentService.ts"
import {
  AttachmentDetail,
  AttachmentRecordWire,
  FromUrlRequest,
  MAX_UPLOAD_BYTES,
  MAX_UPLOAD_REQUEST_BYTES,
  URL_FETCH_TYPES
} from "./Upload.ts"

/** Every route of the attachments area. */
export const attachmentRoutes = [
  route({
    method: "POST",
    path: "/attachments/upload",
    operationId: "uploadAttachment",
    summary:
      `Upload a file (multipart field 'file', with a filename; at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB) to send later: its id goes into a message's attachments. Streamed, never held whole; a request declaring a Content-Length over ${MAX_UPLOAD_REQUEST_BYTES / 1024 / 1024} MB is refused before its body is read; executables, scripts and empty files are refused, and bytes must match the declared type`,
    tag: "Attachments",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    rawBody: {
      contentType: "multipart/form-data",
      description: "The file in the field `file`; the part must carry a filename",
      schema: { type: "object", required: ["file"], properties: { file: { type: "string", format: "binary" } } }
    },
    response: { status: 201, schema: AttachmentRecordWire, description: "The attachment record" },
    errors: [400, 422],
    handle: ({ principal, request }) =>
      Effect.flatMap(AttachmentService, (service) => service.upload(principal.tenantId, request))
  }),
  route({
    method: "POST",
    path: "/attachments/from-url",
    operationId: "attachmentFromUrl",
    summary:
      `Fetch a file from a public http(s) URL to send later (no redirects followed, 30 s, at most ${MAX_UPLOAD_BYTES / 1024 / 1024} MB; types: ${URL_FETCH_TYPES.join(", ")}). filename defaults to the URL's last path segment`,
    tag: "Attachments",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    body: FromUrlRequest,
    response: { status: 201, schema: AttachmentRecordWire, description: "The attachment record" },
    errors: [400, 413, 415, 422],
    handle: ({ principal, body }) => Effect.flatMap(AttachmentService, (service) => service.fromUrl(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/attachments/{attachment_id}",
    operationId: "getAttachment",
    summary: "Get an attachment of the tenant with a signed download link that expires (fetch it again for a fresh one)",
    tag: "Attachments",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    response: { status: 200, schema: AttachmentDetail, description: "The attachment" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "attachment_id", "Attachment")
        return yield* (yield* AttachmentService).detail(principal.tenantId, id)
      })
  }),
  route({
    method: "DELETE",
    path: "/attachments/{attachment_id}",
    operationId: "deleteAttachment",
    summary:
      "Delete an upload not yet sent, record and bytes. One a message already carries answers 409 with code attachment_already_sent and stays (it goes with its contact). Uploads never sent are also deleted a day after they were made",
    tag: "Attachments",
    auth: { kind: "api_key", scopes: ["messages:delete"] },
    response: {
      status: 200,
      schema: Schema.Struct({ id: UuidId, deleted: Schema.Literal(true) }),
      description: "The upload is deleted"
    },
    errors: [404, 409],
    errorDescriptions: { 409: "The attachment is already sent with a message (code attachment_already_sent)" },
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "attachment_id", "Attachment")
        return yield* (yield* AttachmentService).deleteUnsent(principal.tenantId, id)
      })
  })
]
