import { Schema } from "effect"
import { ChannelType } from "../kernel/ChannelType.ts"
import { HttpUrl } from "../kernel/HttpUrl.ts"
import { UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { ConnectTokenRecord } from "../ports/ConnectTokenStore.ts"
import { ConnectTokenStatus, statusAt } from "./ConnectTokenMachine.ts"

/** The spec's limits and defaults for connect tokens. */
export const CONNECT_TOKEN_LIMITS = {
  expires_in_hours: { minimum: 1, maximum: 168, default: 24 },
  max_uses: { minimum: 1, maximum: 100, default: 10 },
  use_window_minutes: { minimum: 5, maximum: 1440, default: 30 }
} as const

const bounded = (limits: { readonly minimum: number; readonly maximum: number }) =>
  Schema.Int.check(Schema.isBetween({ minimum: limits.minimum, maximum: limits.maximum }))

/** Body of `POST /channel-connect-tokens`. */
export const CreateConnectTokenRequest = Schema.Struct({
  allowed_channel_types: Schema.Array(ChannelType).check(
    Schema.isMinLength(1, { message: "List at least one channel type" }),
    Schema.isUnique({ message: "List each channel type once" })
  ),
  name: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255))),
  expires_in_hours: Schema.optionalKey(bounded(CONNECT_TOKEN_LIMITS.expires_in_hours)),
  max_uses: Schema.optionalKey(bounded(CONNECT_TOKEN_LIMITS.max_uses)),
  use_window_minutes: Schema.optionalKey(bounded(CONNECT_TOKEN_LIMITS.use_window_minutes)),
  partner_name: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))),
  partner_redirect_url: Schema.optionalKey(HttpUrl)
})
/** Body of `POST /channel-connect-tokens`. */
export type CreateConnectTokenRequest = typeof CreateConnectTokenRequest.Type
export declare namespace CreateConnectTokenRequest {}

/** A connect token as list and get return it: never the raw token. */
export const ConnectToken = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  name: Schema.NullOr(Schema.String),
  token_prefix: Schema.String,
  status: ConnectTokenStatus,
  allowed_channel_types: Schema.Array(Schema.String),
  partner_name: Schema.String,
  partner_redirect_url: Schema.NullOr(Schema.String),
  expires_at: Schema.String,
  max_uses: Schema.Int,
  uses_count: Schema.Int,
  use_window_minutes: Schema.Int,
  use_window_ends_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String),
  created_at: Schema.String
})
/** A connect token as list and get return it. */
export type ConnectToken = typeof ConnectToken.Type
export declare namespace ConnectToken {}

/** The creation response: the token plus `connect_url`, the only place the raw token ever appears. */
export const CreatedConnectToken = Schema.Struct({ ...ConnectToken.fields, connect_url: Schema.String })

/** Response of `GET /channel-connect-tokens`. */
export const ConnectTokenList = Schema.Struct({ items: Schema.Array(ConnectToken), pagination: PaginationInfo })

/** The wire form of a stored token, with its status at `now`. */
export const toConnectToken = (record: ConnectTokenRecord, now: string): ConnectToken => ({
  id: record.id,
  tenant_id: record.tenant_id,
  name: record.name,
  token_prefix: record.token_prefix,
  status: statusAt(record, now),
  allowed_channel_types: record.allowed_channel_types,
  partner_name: record.partner_name,
  partner_redirect_url: record.partner_redirect_url,
  expires_at: record.expires_at,
  max_uses: record.max_uses,
  uses_count: record.uses_count,
  use_window_minutes: record.use_window_minutes,
  use_window_ends_at: record.use_window_ends_at,
  revoked_at: record.revoked_at,
  created_at: record.created_at
})
