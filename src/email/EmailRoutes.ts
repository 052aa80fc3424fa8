import { Effect } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import {
  ComposeRequest,
  CreatedEmailIntegration,
  CreateEmailIntegrationRequest,
  EmailIntegration,
  EmailIntegrationList,
  EmailMessage,
  EmailThread,
  InlineImageUpload,
  ReplyRequest
} from "./Email.ts"
import { EmailService } from "./EmailService.ts"
import { MAX_EMAIL_ATTACHMENT_BYTES } from "./OutgoingEmail.ts"

const LIMIT = `${MAX_EMAIL_ATTACHMENT_BYTES / 1024 / 1024} MB`
const SEND_ERRORS = [404, 413, 422, 502, 503] as const

/** Every route of the email area. */
export const emailRoutes = [
  route({
    method: "POST",
    path: "/email-integrations",
    operationId: "createEmailIntegration",
    summary:
      "Create an email integration (a mailbox of the workspace). The answer holds the inbound URL and its secret, shown this once: received mail is posted there as raw RFC 5322 with `Authorization: Bearer <inbound_secret>`",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["channels:create"] },
    body: CreateEmailIntegrationRequest,
    response: { status: 201, schema: CreatedEmailIntegration, description: "The integration, with its inbound secret" },
    errors: [409, 422],
    handle: ({ principal, body }) =>
      Effect.flatMap(EmailService, (service) => service.createIntegration(principal.tenantId, body))
  }),
  route({
    method: "GET",
    path: "/email-integrations",
    operationId: "listEmailIntegrations",
    summary: "List the workspace's email integrations, oldest first",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["channels:read"] },
    response: { status: 200, schema: EmailIntegrationList, description: "The integrations (never their secrets)" },
    errors: [],
    handle: ({ principal }) =>
      Effect.map(
        Effect.flatMap(EmailService, (service) => service.listIntegrations(principal.tenantId)),
        (items) => ({ items })
      )
  }),
  route({
    method: "GET",
    path: "/email-integrations/{email_integration_id}",
    operationId: "getEmailIntegration",
    summary: "Get an email integration",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["channels:read"] },
    response: { status: 200, schema: EmailIntegration, description: "The integration" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "email_integration_id", "Email integration")
        return yield* (yield* EmailService).getIntegration(principal.tenantId, id)
      })
  }),
  route({
    method: "GET",
    path: "/email-integrations/conversations/{conversation_id}/email-thread",
    operationId: "getEmailThread",
    summary: "The emails of an email conversation, oldest first, with their files (use attachment_id with the summary endpoints)",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    response: { status: 200, schema: EmailThread, description: "The thread" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "conversation_id", "Conversation")
        return yield* (yield* EmailService).thread(principal.tenantId, id)
      })
  }),
  route({
    method: "GET",
    path: "/email-integrations/email-messages/{email_message_id}",
    operationId: "getEmailMessage",
    summary: "Get an email with its files",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    response: { status: 200, schema: EmailMessage, description: "The email" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "email_message_id", "Email message")
        return yield* (yield* EmailService).getEmail(principal.tenantId, id)
      })
  }),
  route({
    method: "GET",
    path: "/email-integrations/email-messages/{email_message_id}/thread",
    operationId: "getEmailMessageThread",
    summary: "The whole thread an email belongs to, oldest first",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["messages:read"] },
    response: { status: 200, schema: EmailThread, description: "The thread" },
    errors: [404],
    handle: ({ principal, params }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "email_message_id", "Email message")
        return yield* (yield* EmailService).threadOfEmail(principal.tenantId, id)
      })
  }),
  route({
    method: "POST",
    path: "/email-integrations/email-messages/{id}/reply",
    operationId: "replyToEmail",
    summary:
      `Reply to an email (In-Reply-To, References, 'Re:' subject) with a text body, an optional HTML body and files. An inline image upload whose content_id appears as cid: in html_body is embedded, not listed as a file. At most ${LIMIT} of files and images in all (413 otherwise, nothing sent)`,
    tag: "Email",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    body: ReplyRequest,
    response: { status: 201, schema: EmailMessage, description: "The email as sent" },
    errors: [...SEND_ERRORS],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "id", "Email message")
        return yield* (yield* EmailService).reply(principal.tenantId, id, body)
      })
  }),
  route({
    method: "POST",
    path: "/email-integrations/conversations/{id}/compose-email",
    operationId: "composeEmail",
    summary:
      `Start a new email in an email conversation, to its contact, with files and inline images as for a reply. At most ${LIMIT} of files and images in all (413 otherwise, nothing sent)`,
    tag: "Email",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    body: ComposeRequest,
    response: { status: 201, schema: EmailMessage, description: "The email as sent" },
    errors: [...SEND_ERRORS],
    handle: ({ principal, params, body }) =>
      Effect.gen(function*() {
        const id = yield* pathId(params, "id", "Conversation")
        return yield* (yield* EmailService).compose(principal.tenantId, id, body)
      })
  }),
  route({
    method: "POST",
    path: "/email-integrations/inline-images/upload",
    operationId: "uploadInlineImage",
    summary:
      "Upload an image to embed in an HTML body (multipart field 'file'): put `cid:<content_id>` in html_body exactly as returned, and attachment_id in the same request's attachment_ids. The upload rules of /attachments/upload apply, and a file that is not an image is refused (nothing of it kept)",
    tag: "Email",
    auth: { kind: "api_key", scopes: ["messages:create"] },
    rawBody: {
      contentType: "multipart/form-data",
      description: "The image in the field `file`; the part must carry a filename",
      schema: { type: "object", required: ["file"], properties: { file: { type: "string", format: "binary" } } }
    },
    response: { status: 201, schema: InlineImageUpload, description: "The image's attachment id, content id and a signed link" },
    errors: [400, 422],
    handle: ({ principal, request }) =>
      Effect.flatMap(EmailService, (service) => service.uploadInlineImage(principal.tenantId, request))
  })
]
