import { Context, Effect, Layer, Option } from "effect"
import { ChannelService } from "../channels/ChannelService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { type BadRequest, ChannelUnavailable, type FailedWithBody, InvalidRequest, NotFound, OperatorFailed } from "../kernel/ApiError.ts"
import { chatappCredentialsOf } from "../kernel/ChatappChannel.ts"
import { EncodedJson } from "../kernel/EncodedJson.ts"
import { isRateLimitKind } from "../kernel/OperatorErrorKind.ts"
import { operatorDetail } from "../kernel/OperatorFailure.ts"
import type { ChatappFieldHandler } from "../kernel/ChatappEvents.ts"
import { type PageRequest, toWindow } from "../kernel/Pagination.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { ListService } from "../lists/ListService.ts"
import { type Message, MessageService } from "../messages/MessageService.ts"
import { type ChatappCredentials, type ChatappOutboundMessage, ChatPlatform, type ChatPlatformError, type LibraryQuery } from "../ports/ChatPlatform.ts"
import type { ChannelRecord } from "../ports/ChannelStore.ts"
import { type TemplateFilter, TemplateStore } from "../ports/TemplateStore.ts"
import { normalTemplateName } from "./Adoption.ts"
import { makeAdoption, refused, statusOf } from "./AdoptionFlow.ts"
import type { LibraryBrowseResponse } from "./LibraryEntry.ts"
import { type AdoptRequest, type AdoptResponse, type SendTemplateRequest, type Template, toTemplate } from "./Template.ts"
import { TemplateLibraryService } from "./TemplateLibraryService.ts"
import { placeholdersOf, sendComponentsOf } from "./TemplateParameters.ts"

/** A library browse: the filters, the channel whose credentials read the catalog, and how many entries to return. */
export interface BrowseRequest extends LibraryQuery {
  readonly channel_id: string
  readonly limit: number
}

/** Longest value of one template variable the operator takes. */
export const MAX_VARIABLE_LENGTH = 1024

const templateNotFound = (id: string) => new NotFound({ message: `Template ${id} not found` })

/** How a library read answers when no copy can stand in: 429, 503 or 502, with the operator's words. */
const libraryFailure = (error: ChatPlatformError): OperatorFailed =>
  new OperatorFailed({
    status: isRateLimitKind(error.kind) ? 429 : error.kind === "transient" ? 503 : 502,
    code: isRateLimitKind(error.kind) ? "operator_rate_limited" : error.kind === "transient" ? "operator_unavailable" : `operator_${error.kind}`,
    message: isRateLimitKind(error.kind)
      ? "The operator is rate-limiting template library requests and no copy of this catalog is cached; try again later"
      : error.kind === "transient"
      ? "The operator cannot be reached to read the template library and no copy of this catalog is cached; try again shortly"
      : `The operator refused to read the template library: ${error.userMessage ?? error.message}`,
    operator: operatorDetail(error)
  })

/** The body with its variables filled, as the conversation shows the message. */
const rendered = (components: Template["components"], values: ReadonlyArray<string>): string | null => {
  const body = components.find((component) => component.type === "BODY")?.text
  if (typeof body !== "string") return null
  const bodyValues = values.slice(placeholdersOf(components).filter((p) => p.component === "header").length)
  return body.replace(/\{\{\s*(\d+)\s*\}\}/g, (whole, n: string) => bodyValues[Number(n) - 1] ?? whole)
}

/** A template send checked and rendered once, for any number of contacts (`prepareSend`). */
export interface PreparedTemplateSend {
  readonly channel: ChannelRecord
  readonly credentials: ChatappCredentials
  readonly messageType: "template"
  readonly text: string | null
  readonly content: Readonly<Record<string, unknown>>
  readonly operatorMessage: ChatappOutboundMessage
}

/**
 * Chat-app templates: the operator's library browsed through a cache, entries adopted into a
 * channel, templates read, listed and sent, and moved by the operator's status webhooks.
 */
export class TemplateService extends Context.Service<TemplateService, {
  readonly browse: (
    tenantId: string,
    request: BrowseRequest
  ) => Effect.Effect<LibraryBrowseResponse, NotFound | ChannelUnavailable | OperatorFailed | StorageError>
  /** `browse`'s answer as its JSON text, written from each entry's text kept with the copy: what the API sends. */
  readonly browseEncoded: (
    tenantId: string,
    request: BrowseRequest
  ) => Effect.Effect<EncodedJson<LibraryBrowseResponse>, NotFound | ChannelUnavailable | OperatorFailed | StorageError>
  /** Adopts a library entry; `already_existed` says whether it was there before (200) or is new (201). */
  readonly adopt: (
    tenantId: string,
    request: AdoptRequest
  ) => Effect.Effect<AdoptResponse, NotFound | BadRequest | InvalidRequest | FailedWithBody | StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Template, NotFound | StorageError>
  readonly list: (
    tenantId: string,
    filter: TemplateFilter,
    page: PageRequest
  ) => Effect.Effect<{ readonly items: ReadonlyArray<Template>; readonly total: number }, StorageError>
  /** Sends an approved template to a contact on the template's channel (`message.sent`). */
  readonly send: (
    tenantId: string,
    templateId: string,
    request: SendTemplateRequest
  ) => Effect.Effect<Message, NotFound | ChannelUnavailable | InvalidRequest | OperatorFailed | StorageError>
  /**
   * Everything `send` checks and builds before it knows the contact, done once for many sends of
   * the same template and values (a campaign's round on a number): the channel usable, the template
   * approved there, the values fitting it, the operator's message rendered.
   */
  readonly prepareSend: (
    tenantId: string,
    templateId: string,
    request: Omit<SendTemplateRequest, "contact_id">
  ) => Effect.Effect<PreparedTemplateSend, NotFound | ChannelUnavailable | InvalidRequest | StorageError>
  /** The inbound handler of `message_template_status_update`: the operator approved, rejected, paused, … a template. */
  readonly statusHandler: ChatappFieldHandler
}>()("omnichannel-core/templates/TemplateService") {
  static readonly layer = Layer.effect(
    TemplateService,
    Effect.gen(function*() {
      const templates = yield* TemplateStore
      const platform = yield* ChatPlatform
      const library = yield* TemplateLibraryService
      const channels = yield* ChannelService
      const contacts = yield* ContactService
      const conversations = yield* ConversationService
      const messages = yield* MessageService
      const lists = yield* ListService
      const adopt = makeAdoption({ templates, platform, library })

      /** The channel in the tenant (404), connected and holding a business account and a token (400 `channel_unavailable`). */
      const usableChannel = Effect.fnUntraced(function*(tenantId: string, channelId: string) {
        const channel = yield* Effect.catchTag(
          channels.get(tenantId, channelId.toLowerCase()),
          "NotFound",
          () => Effect.fail(new NotFound({ message: `Channel ${channelId} not found` }))
        )
        const credentials = chatappCredentialsOf(channel)
        if (channel.status !== "active" || Option.isNone(credentials)) {
          return yield* ChannelUnavailable.of(channel.id)
        }
        return { channel, credentials: credentials.value as ChatappCredentials }
      })

      const statusHandler: ChatappFieldHandler = {
        name: "template status",
        handle: (event) =>
          Effect.gen(function*() {
            const value = event.value as Record<string, unknown> | null
            const templateId = value?.message_template_id
            const reported = value?.event
            if ((typeof templateId !== "string" && typeof templateId !== "number") || typeof reported !== "string") {
              return "continue" as const
            }
            const reason = typeof value?.reason === "string" && value.reason !== "NONE" ? value.reason : null
            const at = yield* now
            for (const template of yield* templates.findByExternalId(String(templateId))) {
              const status = statusOf(reported)
              if (template.status === status && template.status_reason === reason) continue
              yield* templates.update(template.tenant_id, { ...template, status, status_reason: reason, updated_at: at })
            }
            return "continue" as const
          })
      }

      /** The copy a browse answers from, and which of its entries the channel already has. */
      const browseCopy = Effect.fnUntraced(function*(tenantId: string, request: BrowseRequest) {
        // The channel and its template names are read at once (two round trips in parallel on
        // PostgreSQL); the names are the tenant's own, and unused if the channel is not there.
        const [{ credentials }, names] = yield* Effect.all([
          usableChannel(tenantId, request.channel_id),
          templates.namesOnChannel(tenantId, request.channel_id.toLowerCase())
        ], { concurrency: 2 })
        const { channel_id: _channel, limit: _limit, ...query } = request
        const copy = yield* library.browse(credentials, query).pipe(Effect.mapError((error) =>
          error._tag === "ChatPlatformError" ? libraryFailure(error) : error
        ))
        const keys = new Set(names.map((t) => `${t.name}\n${t.language}`))
        return {
          copy,
          added: (entry: { readonly name: string; readonly language: string }) => keys.has(`${entry.name}\n${entry.language}`)
        }
      })

      const prepareSend = Effect.fn("TemplateService.prepareSend")(function*(
        tenantId: string,
        templateId: string,
        request: Omit<SendTemplateRequest, "contact_id">
      ) {
        const found = yield* templates.get(tenantId, templateId)
        if (Option.isNone(found)) return yield* templateNotFound(templateId)
        const template = found.value
        const { channel, credentials } = yield* usableChannel(tenantId, request.channel_id)
        if (template.channel_id !== channel.id) {
          return yield* InvalidRequest.single(
            ["body", "channel_id"],
            `Template ${template.id} belongs to channel ${template.channel_id}; adopt it on channel ${channel.id} to send it there`,
            "template_not_on_channel"
          )
        }
        if (template.status !== "approved") {
          return yield* InvalidRequest.single(
            ["path", "template_id"],
            `Template ${template.id} is ${template.status}; only an approved template can be sent`,
            "template_not_approved"
          )
        }
        if (request.language !== undefined && request.language !== template.language) {
          return yield* InvalidRequest.single(
            ["body", "language"],
            `Template ${template.id} is in ${template.language}; adopt the ${request.language} version to send that language`,
            "language_mismatch"
          )
        }
        const placeholders = placeholdersOf(template.components)
        const values = request.variable_values ?? []
        if (values.length !== placeholders.length) {
          const expected = placeholders.map((p) => (p.component === "button" ? `button ${p.index} URL suffix` : `${p.component} {{${p.index}}}`))
          return yield* InvalidRequest.single(
            ["body", "variable_values"],
            `Expected ${placeholders.length} value(s)${expected.length === 0 ? "" : ` (${expected.join(", ")})`}, got ${values.length}`,
            "value_count_mismatch"
          )
        }
        const bad = values.findIndex((value) => value.trim() === "" || value.length > MAX_VARIABLE_LENGTH)
        if (bad !== -1) {
          return yield* InvalidRequest.single(["body", "variable_values", bad], `Must be 1 to ${MAX_VARIABLE_LENGTH} characters, not blank`, "value_error")
        }
        return {
          channel,
          credentials,
          messageType: "template",
          text: rendered(template.components, values),
          content: {
            template: {
              id: template.id,
              template_id: template.external_id,
              name: template.name,
              language: template.language,
              variable_values: values
            }
          },
          operatorMessage: {
            type: "template",
            template: {
              name: template.name,
              language: { code: template.language },
              components: sendComponentsOf(template.components, values)
            }
          }
        } satisfies PreparedTemplateSend
      })

      return TemplateService.of({
        browse: Effect.fn("TemplateService.browse")(function*(tenantId, request) {
          const { copy, added } = yield* browseCopy(tenantId, request)
          return {
            // Fields in the schema's order, as the API writes them.
            items: copy.entries.slice(0, request.limit).map(({ requires_input: requiresInput, ...entry }) => ({
              ...entry,
              already_added: added(entry),
              requires_input: requiresInput
            })),
            total: copy.entries.length,
            facets: copy.facets,
            language: request.language?.trim() || null,
            stale: copy.stale,
            warning: copy.warning
          }
        }),

        browseEncoded: Effect.fn("TemplateService.browseEncoded")(function*(tenantId, request) {
          const { copy, added } = yield* browseCopy(tenantId, request)
          const fragments = copy.fragments()
          const count = Math.min(request.limit, copy.entries.length)
          let items = ""
          for (let i = 0; i < count; i++) {
            const [head, tail] = fragments[i]!
            items += `${i === 0 ? "" : ","}${head}${added(copy.entries[i]!)}${tail}`
          }
          const language = JSON.stringify(request.language?.trim() || null)
          return new EncodedJson<LibraryBrowseResponse>(
            `{"items":[${items}],"total":${copy.entries.length},"facets":${JSON.stringify(copy.facets)},"language":${language},"stale":${copy.stale},"warning":${JSON.stringify(copy.warning)}}`
          )
        }),

        adopt: Effect.fn("TemplateService.adopt")(function*(tenantId, request) {
          // Every failure of an adoption answers the adopt response's shape (`success: false`).
          const names = { name: normalTemplateName(request.name ?? request.library_template_name), language: request.language?.trim() ?? "en_US" }
          const { channel, credentials } = yield* usableChannel(tenantId, request.channel_id).pipe(Effect.catchTags({
            NotFound: (error) => Effect.fail(refused(404, error.message, names)),
            ChannelUnavailable: (error) => Effect.fail(refused(400, error.message, names))
          }))
          return (yield* adopt(tenantId, channel.id, credentials, request)).response
        }),

        get: Effect.fn("TemplateService.get")(function*(tenantId, id) {
          const found = yield* templates.get(tenantId, id)
          if (Option.isNone(found)) return yield* templateNotFound(id)
          return toTemplate(found.value)
        }),

        list: Effect.fn("TemplateService.list")(function*(tenantId, filter, page) {
          const { items, total } = yield* templates.list(tenantId, filter, toWindow(page))
          return { items: items.map(toTemplate), total }
        }),

        send: Effect.fn("TemplateService.send")(function*(tenantId, templateId, request) {
          const prepared = yield* prepareSend(tenantId, templateId, request)
          const { channel } = prepared
          const contact = yield* Effect.catchTag(
            contacts.get(tenantId, request.contact_id.toLowerCase()),
            "NotFound",
            () => Effect.fail(new NotFound({ message: `Contact ${request.contact_id} not found` }))
          )
          if (contact.phone === null) {
            return yield* InvalidRequest.single(["body", "contact_id"], "The contact has no phone number", "contact_unreachable")
          }
          // Two writers opening the contact's conversation at once: the loser finds the winner's.
          const { conversation } = yield* conversations.openFor({ tenantId, channelId: channel.id, contactId: contact.id }).pipe(
            Effect.retry({ times: 1, while: (error) => error.reason === "UniqueViolation" })
          )
          return yield* messages.deliver({
            conversation,
            credentials: prepared.credentials,
            to: contact.phone,
            messageType: prepared.messageType,
            text: prepared.text,
            content: prepared.content,
            operatorMessage: prepared.operatorMessage
          }).pipe(
            // The contact turned marketing messages off: kept on the contact, so campaigns skip them.
            Effect.tapError((error) =>
              error._tag === "OperatorFailed" && error.operator.kind === "opted_out"
                ? Effect.flatMap(now, (at) =>
                  lists.recordOptOut({
                    tenant_id: tenantId,
                    contact_id: contact.id,
                    channel_id: channel.id,
                    source: "operator_error",
                    opted_out_at: at
                  }))
                : Effect.void
            )
          )
        }),

        prepareSend,
        statusHandler
      })
    })
  )
}
