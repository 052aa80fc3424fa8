import { Context, Effect, Schema } from "effect"
import { groupBy } from "./Grouping.ts"
import type { OperatorErrorKind } from "./OperatorErrorKind.ts"
import { StorageError } from "./StorageError.ts"

/** What the operator said when a message failed, as a status or an error entry carries it. */
export interface ChatappErrorInfo {
  readonly code: number | null
  readonly title: string | null
  readonly message: string
  readonly details: string | null
}

/** An inbound message from a contact, as the operator sent it (its own JSON object, checked for the fields relied on). */
export interface ChatappMessageEvent {
  readonly kind: "message"
  /** The key a redelivery repeats: the message id (`wamid.…`). */
  readonly key: string
  readonly entryId: string
  readonly phoneNumberId: string
  /** The sender's chat-app id: the digits of their number. */
  readonly from: string
  readonly profileName: string | null
  readonly externalId: string
  readonly type: string
  /** The operator's time of the message (ISO), when it gave a readable one. */
  readonly sentAt: string | null
  readonly message: Readonly<Record<string, unknown>>
}

/** A status the operator reports for a message the service sent. */
export interface ChatappStatusEvent {
  readonly kind: "status"
  /** Message id and status: the same status of the same message is one event. */
  readonly key: string
  readonly entryId: string
  readonly phoneNumberId: string
  readonly externalId: string
  readonly status: "sent" | "delivered" | "read" | "failed"
  readonly occurredAt: string | null
  readonly recipientId: string | null
  readonly error: ChatappErrorInfo | null
  /** The kind of `error` (a `failed` status only): what services decide on, never its raw code. */
  readonly errorKind: OperatorErrorKind | null
  /**
   * The send's `biz_opaque_callback_data`, as the operator echoes it in each status of a message
   * sent with one (the sender's own reference to it); null when absent.
   */
  readonly callbackData: string | null
}

/** A change of any other field (`flows`, `phone_number_quality_update`, `user_preferences`, …), for the areas that handle it. */
export interface ChatappFieldEvent {
  readonly kind: "field"
  /** A hash of the entry id, field and value: a redelivered change has the same key. */
  readonly key: string
  readonly entryId: string
  readonly field: string
  /** `metadata.phone_number_id` when the change carries one. */
  readonly phoneNumberId: string | null
  readonly value: unknown
}

/** One thing a payload reports. */
export type ChatappEvent = ChatappMessageEvent | ChatappStatusEvent | ChatappFieldEvent

/** The message types whose message carries a file the operator keeps as a media object. */
export const CHATAPP_MEDIA_TYPES: ReadonlySet<string> = new Set(["image", "document", "audio", "video", "sticker"])

/** A payload read into events, and notes on what was skipped and why. */
export interface ParsedPayload {
  readonly events: ReadonlyArray<ChatappEvent>
  readonly notes: ReadonlyArray<string>
}

/** A handler cannot finish now (the operator or the blob store is briefly away): the payload is tried again later. */
export class RetryLater extends Schema.TaggedError<RetryLater>()("RetryLater", {
  message: Schema.String
}) {}

/** The channel an event was routed to, as handlers see it. */
export interface InboundChannel {
  readonly id: string
  readonly tenant_id: string
  readonly platform: string
  readonly external_id: string
  readonly config: Readonly<Record<string, string>>
  readonly secrets: Readonly<Record<string, string>>
}

/** What a handler of inbound messages is given. */
export interface ChatappMessageInput {
  readonly channel: InboundChannel
  readonly event: ChatappMessageEvent
  /** Which try of the payload this is (1 first), and whether it is the last before giving up. */
  readonly attempt: number
  readonly lastAttempt: boolean
}

/**
 * Whether the handlers after this one see the item: `continue`; `stop` (none does); `consumed` (a
 * keyword acted on the message: handlers that interpret messages, such as flows or bots, skip it;
 * handlers that record messages still run).
 */
export type HandlerVerdict = "continue" | "consumed" | "stop"

/**
 * A handler's work on one item, prepared outside the transaction (downloads, files): `run` happens
 * in the item's transaction; `discard` undoes what `prepare` left behind when that transaction does
 * not commit the item (a duplicate, a failure, an earlier handler that stopped the chain).
 */
export interface PreparedStep {
  readonly run: Effect.Effect<HandlerVerdict, StorageError>
  readonly discard: Effect.Effect<void>
  /** Runs once the item's transaction committed `run`'s work (a reply to the contact); never fails. */
  readonly committed?: Effect.Effect<void>
}

/** An area's handler of inbound chat-app messages (keywords, flow answers, the conversation store). */
export interface ChatappMessageHandler {
  readonly name: string
  /** A handler that records messages (the conversation store) runs even after another consumed the message. */
  readonly records?: boolean
  readonly prepare: (input: ChatappMessageInput) => Effect.Effect<PreparedStep, RetryLater | StorageError>
  /**
   * Whether the handler may act on `event` (a keyword's text, a flow's answer). A handler that says
   * no lets the message go with others through the recording handlers' `recordMany` in one
   * transaction; one without `wants` sees every message on its own.
   */
  readonly wants?: (event: ChatappMessageEvent) => boolean
  /**
   * A recording handler's batch form, for messages no other handler wants and with no file to fetch:
   * records them all, in order, inside the caller's transaction, as `prepare`'s `run` would one by one.
   */
  readonly recordMany?: (inputs: ReadonlyArray<ChatappMessageInput>) => Effect.Effect<void, StorageError>
}

/** A status and the channel it was routed to, as status handlers see it. */
export interface ChatappStatusInput {
  readonly channel: InboundChannel
  readonly event: ChatappStatusEvent
}

/**
 * How many times a status handler reads again what another writer moved under its compare-and-set
 * writes before it gives up (`Unavailable`: the payload is tried again later).
 */
const STATUS_MOVE_ROUNDS = 5

/**
 * Moves what `inputs` report, a channel at a time, until every move held: `attempt(channel, inputs)`
 * reads the rows the inputs name, applies the inputs in order, writes the changed rows
 * compare-and-set, and resolves to the operator ids whose write lost to another writer; their inputs
 * go again on a new read, up to `STATUS_MOVE_ROUNDS` rounds, then `Unavailable` (`what` kept moving).
 */
export const settleStatuses = (
  inputs: ReadonlyArray<ChatappStatusInput>,
  what: string,
  attempt: (channel: InboundChannel, inputs: ReadonlyArray<ChatappStatusInput>) => Effect.Effect<ReadonlySet<string | null>, StorageError>
): Effect.Effect<void, StorageError> =>
  Effect.gen(function*() {
    // Channel by channel in their ids' order, so two batches that hold messages of the same channels
    // take them in the same order.
    const groups = [...groupBy(inputs, ({ channel }) => channel.id)].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    for (const [, group] of groups) {
      let unsettled: ReadonlyArray<ChatappStatusInput> = group
      for (let round = 0; unsettled.length > 0; round++) {
        if (round === STATUS_MOVE_ROUNDS) {
          return yield* new StorageError({ reason: "Unavailable", message: `${what} kept moving under other writers` })
        }
        const lost = yield* attempt(group[0]!.channel, unsettled)
        unsettled = unsettled.filter(({ event }) => lost.has(event.externalId))
      }
    }
  })

/** An area's handler of message statuses. */
export interface ChatappStatusHandler {
  readonly name: string
  readonly handle: (input: ChatappStatusInput) => Effect.Effect<HandlerVerdict, StorageError>
  /**
   * The batch form of `handle` for a handler that never stops the chain: handles every status of
   * `inputs`, in order, inside the caller's transaction. Statuses go one by one through `handle` when
   * a handler has none.
   */
  readonly handleMany?: (inputs: ReadonlyArray<ChatappStatusInput>) => Effect.Effect<void, StorageError>
  /**
   * Whether handling `input` again has the effect of handling it once (a forward-only move, a row
   * kept once by its key). A status every handler says so of is handled without a de-duplication key
   * of its own: a redelivery goes through the handlers again and changes nothing. Without it, every
   * status is handled once by its key.
   */
  readonly repeatable?: (input: ChatappStatusInput) => boolean
}

/** Whether every one of `handlers` handles `input` again to the effect of once (see `repeatable`). */
export const repeatableStatus = (handlers: ReadonlyArray<ChatappStatusHandler>, input: ChatappStatusInput): boolean =>
  handlers.every((handler) => handler.repeatable?.(input) === true)

/** An area's handler of one field (`flows`, `user_preferences`, …); it routes the change itself (by `entryId` or `phoneNumberId`). */
export interface ChatappFieldHandler {
  readonly name: string
  readonly handle: (event: ChatappFieldEvent) => Effect.Effect<HandlerVerdict, RetryLater | StorageError>
}

/**
 * The handlers areas register, in the order they run: de-duplication comes first (the pipeline's
 * own), then keywords, flow answers, and the conversation and message store last. Fields with no
 * handler are stored and noted.
 */
export class ChatappHandlers extends Context.Service<ChatappHandlers, {
  readonly messages: ReadonlyArray<ChatappMessageHandler>
  readonly statuses: ReadonlyArray<ChatappStatusHandler>
  readonly fields: Readonly<Record<string, ReadonlyArray<ChatappFieldHandler>>>
}>()("omnichannel-core/kernel/ChatappHandlers") {}
