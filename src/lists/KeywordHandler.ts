import { Effect, Option } from "effect"
import type { ChannelService } from "../channels/ChannelService.ts"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ConversationService } from "../conversations/ConversationService.ts"
import type { MessageService } from "../messages/MessageService.ts"
import type { ChatappFieldHandler, ChatappMessageHandler, InboundChannel } from "../kernel/ChatappEvents.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ListRecord, ListStore, MarketingOptOutRecord } from "../ports/ListStore.ts"
import { decideKeyword, defaultWelcomeMessage, parseKeyword } from "./Keywords.ts"

/** What the keyword handlers need. */
export interface KeywordDeps {
  readonly store: ListStore["Service"]
  readonly contacts: ContactService["Service"]
  readonly conversations: ConversationService["Service"]
  readonly messages: MessageService["Service"]
  readonly channels: ChannelService["Service"]
  readonly subscribe: (tenantId: string, listId: string, contactId: string, channelId: string) => Effect.Effect<void, StorageError>
  readonly unsubscribe: (
    tenantId: string,
    listId: string,
    contactId: string,
    method: string,
    channelId: string
  ) => Effect.Effect<void, StorageError>
  readonly recordOptOut: (optOut: MarketingOptOutRecord) => Effect.Effect<void, StorageError>
  readonly removeOptOut: (tenantId: string, contactId: string, channelId: string | null) => Effect.Effect<void, StorageError>
}

const asRecord = (value: unknown): Readonly<Record<string, unknown>> | null =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null
const textOf = (value: unknown): string | null => (typeof value === "string" ? value : null)

/**
 * The text a contact's message says, as keywords read it: typed text, and the text of a button
 * they pressed (a template's quick reply, an interactive reply), which counts as typed.
 */
export const keywordTextOf = (message: Readonly<Record<string, unknown>>): string | null => {
  switch (message.type) {
    case "text":
      return textOf(asRecord(message.text)?.body)
    case "button":
      return textOf(asRecord(message.button)?.text)
    case "interactive": {
      const interactive = asRecord(message.interactive)
      return textOf(asRecord(interactive?.button_reply)?.title) ?? textOf(asRecord(interactive?.list_reply)?.title)
    }
    default:
      return null
  }
}

const names = (lists: ReadonlyArray<ListRecord>) => lists.map((list) => list.name).join(", ")

/** The confirmation of leaving lists. */
export const leftMessage = (lists: ReadonlyArray<ListRecord>): string =>
  `You have been unsubscribed from ${names(lists)} and will get no more messages from ${
    lists.length === 1 ? "it" : "them"
  }. Reply START to subscribe again.`

/** The confirmation of a total opt-out. */
export const OPTED_OUT_MESSAGE = "You have been unsubscribed and will get no more marketing messages from us."

/**
 * Opt-in keywords on inbound chat-app text (before flows; the message is still stored), and the
 * operator's marketing preferences. A reply (welcome, confirmation) goes out once the keyword's
 * changes are committed, inside the customer-service window the contact's message opened.
 */
export const makeKeywordHandlers = (deps: KeywordDeps) => {
  const { store, contacts, conversations, messages, channels } = deps

  const reply = (channel: InboundChannel, contactId: string, text: string) =>
    Effect.gen(function*() {
      const { conversation } = yield* conversations.openFor({ tenantId: channel.tenant_id, channelId: channel.id, contactId })
      yield* messages.send(channel.tenant_id, { conversation_id: conversation.id, text })
    }).pipe(
      Effect.catchCause((cause) =>
        Effect.logWarning("could not send the keyword reply", cause).pipe(
          Effect.annotateLogs({ channel_id: channel.id, contact_id: contactId })
        )
      )
    )

  const messageHandler: ChatappMessageHandler = {
    name: "opt-in keywords",
    // Only text that reads as a keyword: every other message goes with its batch.
    wants: (event) => {
      const text = keywordTextOf(event.message)
      return text !== null && parseKeyword(text) !== null
    },
    prepare: ({ channel, event }) =>
      Effect.sync(() => {
        let answer: { readonly contactId: string; readonly text: string } | null = null
        const run = Effect.gen(function*() {
          const text = keywordTextOf(event.message)
          if (text === null || parseKeyword(text) === null) return "continue" as const
          const tenantId = channel.tenant_id
          if (!(yield* store.hasLists(tenantId))) return "continue" as const
          const { contact } = yield* contacts.findOrCreateByPhone(tenantId, `+${event.from.replace(/\D/g, "")}`, event.profileName)
          const lists = (yield* store.listLists(tenantId)).filter((list) => list.type === "static")
          const subscribed = new Set(
            (yield* store.subscriptionsOf(tenantId, contact.id)).filter((s) => s.status === "subscribed").map((s) => s.list_id)
          )
          const outcome = decideKeyword(text, { lists, subscribed })
          const byId = new Map(lists.map((list) => [list.id, list]))
          switch (outcome.kind) {
            case "pass":
              return "continue" as const
            case "subscribe": {
              const list = byId.get(outcome.listId)!
              yield* deps.subscribe(tenantId, list.id, contact.id, channel.id)
              // Asking to subscribe again lifts the contact's marketing opt-out on this number.
              yield* deps.removeOptOut(tenantId, contact.id, channel.id)
              answer = { contactId: contact.id, text: list.welcome_message ?? defaultWelcomeMessage(list.name) }
              return "consumed" as const
            }
            case "unsubscribe":
            case "opt_out": {
              const left = outcome.listIds.map((id) => byId.get(id)!)
              const method = outcome.kind === "opt_out" ? "optout" : "keyword"
              for (const list of left) yield* deps.unsubscribe(tenantId, list.id, contact.id, method, channel.id)
              if (outcome.kind === "opt_out") {
                yield* deps.recordOptOut({
                  tenant_id: tenantId,
                  contact_id: contact.id,
                  channel_id: channel.id,
                  source: "keyword",
                  opted_out_at: yield* now
                })
              }
              answer = {
                contactId: contact.id,
                text: outcome.kind === "opt_out" || left.length === 0 ? OPTED_OUT_MESSAGE : leftMessage(left)
              }
              return "consumed" as const
            }
          }
        })
        return {
          run,
          discard: Effect.void,
          committed: Effect.suspend(() => (answer === null ? Effect.void : reply(channel, answer.contactId, answer.text)))
        }
      })
  }

  // The operator's `user_preferences` field: a contact stopped (or resumed) marketing messages.
  const preferencesHandler: ChatappFieldHandler = {
    name: "marketing preferences",
    handle: (event) =>
      Effect.gen(function*() {
        if (event.phoneNumberId === null) return "continue" as const
        const channel = yield* channels.routeChatapp(event.phoneNumberId)
        if (Option.isNone(channel)) return "continue" as const
        const tenantId = channel.value.tenant_id
        const entries = asRecord(event.value)?.user_preferences
        for (const entry of Array.isArray(entries) ? entries : []) {
          const pref = asRecord(entry)
          const waId = textOf(pref?.wa_id)
          if (pref === null || waId === null || pref.category !== "marketing_messages") continue
          const { contact } = yield* contacts.findOrCreateByPhone(tenantId, `+${waId.replace(/\D/g, "")}`, null)
          if (pref.value === "stop") {
            yield* deps.recordOptOut({
              tenant_id: tenantId,
              contact_id: contact.id,
              channel_id: channel.value.id,
              source: "operator_preferences",
              opted_out_at: yield* now
            })
          } else if (pref.value === "resume") {
            yield* deps.removeOptOut(tenantId, contact.id, channel.value.id)
          }
        }
        return "continue" as const
      })
  }

  return { messageHandler, preferencesHandler }
}
