import { Schema } from "effect"
import { UuidId, UuidString } from "../kernel/Id.ts"
import { SLUG_PATTERN } from "../kernel/Slug.ts"
import type { ListRecord, SubscriptionRecord } from "../ports/ListStore.ts"

/** Longest welcome message: the operator's text limit. */
export const MAX_WELCOME_LENGTH = 4096

const Slug = Schema.String.check(
  Schema.isPattern(SLUG_PATTERN, {
    message: "Must be lower-case letters, digits and single hyphens, 1 to 63 characters, no hyphen at either end"
  })
)
const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))
const Welcome = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(MAX_WELCOME_LENGTH))

/** What a dynamic list's members match (see `ListFilters`). */
export const ListFiltersSchema = Schema.Struct({
  has_phone: Schema.optionalKey(Schema.Boolean),
  has_email: Schema.optionalKey(Schema.Boolean),
  language: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(35))),
  custom_fields: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  has_opt_in: Schema.optionalKey(Schema.Boolean)
})

/** A list as the API returns it. */
export const List = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  name: Schema.String,
  slug: Schema.String,
  is_default: Schema.Boolean,
  type: Schema.Literals(["static", "dynamic"]),
  filters: Schema.NullOr(ListFiltersSchema),
  /** The text a keyword subscriber receives; null: the default, which confirms and says how to leave. */
  welcome_message: Schema.NullOr(Schema.String),
  /** Contacts subscribed now (static lists). */
  subscriber_count: Schema.Int,
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String)
})
/** A list as the API returns it. */
export type List = typeof List.Type
export declare namespace List {}

/** Response of `GET /lists`. */
export const ListList = Schema.Struct({ items: Schema.Array(List) })

/** Body of `POST /lists`. */
export const CreateListRequest = Schema.Struct({
  name: Name,
  slug: Schema.optionalKey(Slug),
  is_default: Schema.optionalKey(Schema.Boolean),
  type: Schema.optionalKey(Schema.Literals(["static", "dynamic"])),
  filters: Schema.optionalKey(ListFiltersSchema),
  welcome_message: Schema.optionalKey(Welcome)
})
/** Body of `POST /lists`. */
export type CreateListRequest = typeof CreateListRequest.Type
export declare namespace CreateListRequest {}

/** Body of `PATCH /lists/{id}`: fields present change; `welcome_message: null` restores the default. */
export const UpdateListRequest = Schema.Struct({
  name: Schema.optionalKey(Name),
  slug: Schema.optionalKey(Slug),
  is_default: Schema.optionalKey(Schema.Boolean),
  filters: Schema.optionalKey(ListFiltersSchema),
  welcome_message: Schema.optionalKey(Schema.NullOr(Welcome))
})
/** Body of `PATCH /lists/{id}`. */
export type UpdateListRequest = typeof UpdateListRequest.Type
export declare namespace UpdateListRequest {}

/** A contact's subscription as the API returns it. */
export const Subscription = Schema.Struct({
  list_id: UuidId,
  slug: Schema.String,
  contact_id: UuidId,
  status: Schema.Literals(["subscribed", "unsubscribed"]),
  optin_method: Schema.Literals(["keyword", "api", "import", "flow"]),
  subscribed_at: Schema.String,
  unsubscribed_at: Schema.NullOr(Schema.String)
})
/** A contact's subscription as the API returns it. */
export type Subscription = typeof Subscription.Type
export declare namespace Subscription {}

/** Response of `GET /contacts/{id}/subscriptions`. */
export const SubscriptionList = Schema.Struct({ items: Schema.Array(Subscription) })

/** Body of `POST /lists/{id}/subscriptions`. */
export const SubscribeRequest = Schema.Struct({ contact_id: UuidString })

/** The wire form of a list. */
export const toList = (record: ListRecord, subscriberCount: number): List => ({
  id: record.id,
  tenant_id: record.tenant_id,
  name: record.name,
  slug: record.slug,
  is_default: record.is_default,
  type: record.type,
  filters: record.filters,
  welcome_message: record.welcome_message,
  subscriber_count: subscriberCount,
  created_at: record.created_at,
  updated_at: record.updated_at
})

/** The wire form of a subscription. */
export const toSubscription = (record: SubscriptionRecord, slug: string): Subscription => ({
  list_id: record.list_id,
  slug,
  contact_id: record.contact_id,
  status: record.status,
  optin_method: record.optin_method,
  subscribed_at: record.subscribed_at,
  unsubscribed_at: record.unsubscribed_at
})
