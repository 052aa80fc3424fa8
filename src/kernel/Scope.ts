import { Schema } from "effect"

/** Every permission a token can hold: the spec's named scopes plus those of the areas built on them. */
export const ALL_SCOPES = [
  "channels:read",
  "channels:create",
  "channels:admin",
  "messages:read",
  "messages:create",
  "messages:delete",
  "conversations:read",
  "conversations:update",
  "contacts:read",
  "contacts:create",
  "contacts:update",
  "contacts:delete",
  "webhooks:read",
  "webhooks:create",
  "webhooks:update",
  "webhooks:delete",
  "campaigns:read",
  "campaigns:create",
  "campaigns:update",
  "chatapp_flows:read",
  "chatapp_flows:update",
  "team_chat:read",
  "team_chat:create"
] as const

/** A scope name such as `contacts:read`. */
export type Scope = typeof ALL_SCOPES[number]

/** Schema of a scope name. */
export const Scope = Schema.Literals(ALL_SCOPES)

/** True when `value` names a known scope. */
export const isScope = (value: string): value is Scope => (ALL_SCOPES as ReadonlyArray<string>).includes(value)
