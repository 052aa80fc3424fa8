import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** `static`: members are the subscribers; `dynamic`: the contacts matching `filters`. */
export type ListType = "static" | "dynamic"

/**
 * What a dynamic list's members match; every condition given must hold. Reachability (a phone or
 * an email) and "not opted out" apply on top; `has_opt_in` reaches only contacts subscribed to at
 * least one list.
 */
export interface ListFilters {
  readonly has_phone?: boolean
  readonly has_email?: boolean
  readonly language?: string
  /** Custom field key → exact value. */
  readonly custom_fields?: Readonly<Record<string, string>>
  readonly has_opt_in?: boolean
}

/** A list of a tenant. */
export interface ListRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string
  /** URL-safe, unique among the tenant's lists that are not deleted. */
  readonly slug: string
  /** At most one list of a tenant (not deleted) is the default. */
  readonly is_default: boolean
  readonly type: ListType
  readonly filters: ListFilters | null
  /** Sent when someone subscribes by keyword; null: the default text. */
  readonly welcome_message: string | null
  readonly created_at: string
  readonly updated_at: string | null
  /** Lists are deleted softly: their subscriptions (and unsubscriptions) are kept. */
  readonly deleted_at: string | null
}

/** How someone came onto a list. */
export type OptinMethod = "keyword" | "api" | "import" | "flow"

/** A contact on a list, now or formerly: unsubscriptions are kept, never deleted. */
export interface SubscriptionRecord {
  readonly tenant_id: string
  readonly list_id: string
  readonly contact_id: string
  readonly status: "subscribed" | "unsubscribed"
  readonly optin_method: OptinMethod
  /** The channel a keyword came through, when it did. */
  readonly optin_channel_id: string | null
  readonly subscribed_at: string
  readonly unsubscribed_at: string | null
  /** `keyword`, `api`, `optout` (a total opt-out word), `flow`, … */
  readonly unsubscribe_method: string | null
  readonly updated_at: string
}

/**
 * A contact's refusal of marketing: a total opt-out word, or the operator's own (its
 * `user_preferences` webhook, a send refused with code 131050). Campaigns skip such contacts.
 */
export interface MarketingOptOutRecord {
  readonly tenant_id: string
  readonly contact_id: string
  /** The channel it was said on; null: every channel. */
  readonly channel_id: string | null
  /** `keyword`, `operator_preferences`, `operator_error`. */
  readonly source: string
  readonly opted_out_at: string
}

/** Lists, subscriptions and marketing opt-outs; every method is scoped by tenant id. */
export class ListStore extends Context.Service<ListStore, {
  /** Stores a list; a slug or a second default taken among the tenant's live lists fails with `UniqueViolation`. */
  readonly insertList: (list: ListRecord) => Effect.Effect<void, StorageError>
  /** A list that is not deleted. */
  readonly getList: (tenantId: string, id: string) => Effect.Effect<Option.Option<ListRecord>, StorageError>
  readonly findListBySlug: (tenantId: string, slug: string) => Effect.Effect<Option.Option<ListRecord>, StorageError>
  readonly findDefaultList: (tenantId: string) => Effect.Effect<Option.Option<ListRecord>, StorageError>
  /** The tenant's lists that are not deleted, oldest first. */
  readonly listLists: (tenantId: string) => Effect.Effect<ReadonlyArray<ListRecord>, StorageError>
  /** Every list of the tenant, deleted ones too (a subscription history names the list it was). */
  readonly listAllLists: (tenantId: string) => Effect.Effect<ReadonlyArray<ListRecord>, StorageError>
  /** Whether the tenant has at least one list that is not deleted (keywords are handled only then). */
  readonly hasLists: (tenantId: string) => Effect.Effect<boolean, StorageError>
  /** Replaces list `list.id` of the tenant (also to delete it softly); `false` when it does not exist there. */
  readonly updateList: (tenantId: string, list: ListRecord) => Effect.Effect<boolean, StorageError>

  /** Inserts or replaces the contact's subscription to the list. */
  readonly putSubscription: (subscription: SubscriptionRecord) => Effect.Effect<void, StorageError>
  /**
   * The batch form of subscribing: stores each subscription (one list, contacts given once each)
   * unless its contact is subscribed to the list already, whose row is kept as it was; an
   * unsubscribed row is replaced. Resolves to the contact ids it wrote.
   */
  readonly subscribeMany: (subscriptions: ReadonlyArray<SubscriptionRecord>) => Effect.Effect<ReadonlySet<string>, StorageError>
  readonly getSubscription: (
    tenantId: string,
    listId: string,
    contactId: string
  ) => Effect.Effect<Option.Option<SubscriptionRecord>, StorageError>
  /** Every subscription of the contact (either status), oldest first. */
  readonly subscriptionsOf: (
    tenantId: string,
    contactId: string
  ) => Effect.Effect<ReadonlyArray<SubscriptionRecord>, StorageError>
  /** One page of a list's subscribed contacts, by contact id after `afterContactId` (keyset, for audiences). */
  readonly subscribedContacts: (
    tenantId: string,
    listId: string,
    page: { readonly afterContactId: string | null; readonly limit: number }
  ) => Effect.Effect<ReadonlyArray<string>, StorageError>
  /** How many contacts are subscribed to the list. */
  readonly countSubscribed: (tenantId: string, listId: string) => Effect.Effect<number, StorageError>

  /** The subscriptions (either status) of any of `contactIds`, for reading an audience in pages. */
  readonly subscriptionsAmong: (
    tenantId: string,
    contactIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<SubscriptionRecord>, StorageError>
  /** The opt-outs of any of `contactIds`. */
  readonly optOutsAmong: (
    tenantId: string,
    contactIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<MarketingOptOutRecord>, StorageError>
  /** Records an opt-out; a second one for the same contact and channel keeps the first. */
  readonly putOptOut: (optOut: MarketingOptOutRecord) => Effect.Effect<void, StorageError>
  /** Removes the contact's opt-out on that channel (null: the one for every channel); none there succeeds. */
  readonly removeOptOut: (tenantId: string, contactId: string, channelId: string | null) => Effect.Effect<void, StorageError>
  /** The contact's opt-outs (any channel). */
  readonly optOutsOf: (
    tenantId: string,
    contactId: string
  ) => Effect.Effect<ReadonlyArray<MarketingOptOutRecord>, StorageError>
}>()("omnichannel-core/ports/ListStore") {}
