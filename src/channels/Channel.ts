import { Schema } from "effect"
import { UuidId } from "../kernel/Id.ts"
import { PaginationInfo } from "../kernel/Pagination.ts"
import type { ChannelRecord } from "../ports/ChannelStore.ts"

/** A channel as the API returns it; its secrets never leave the service. */
export const Channel = Schema.Struct({
  id: UuidId,
  tenant_id: UuidId,
  platform: Schema.String,
  name: Schema.String,
  status: Schema.Literals(["active", "disconnected"]),
  external_id: Schema.String,
  config: Schema.Record(Schema.String, Schema.String),
  created_via_connect_token_id: Schema.NullOr(UuidId),
  created_at: Schema.String,
  updated_at: Schema.NullOr(Schema.String),
  disconnected_at: Schema.NullOr(Schema.String)
})
/** A channel as the API returns it. */
export type Channel = typeof Channel.Type
export declare namespace Channel {}

/** Response of `GET /channels`. */
export const ChannelList = Schema.Struct({ items: Schema.Array(Channel), pagination: PaginationInfo })

/** The wire form of a stored channel (without its secrets). */
export const toChannel = (record: ChannelRecord): Channel => ({
  id: record.id,
  tenant_id: record.tenant_id,
  platform: record.platform,
  name: record.name,
  status: record.status,
  external_id: record.external_id,
  config: record.config,
  created_via_connect_token_id: record.created_via_connect_token_id,
  created_at: record.created_at,
  updated_at: record.updated_at,
  disconnected_at: record.disconnected_at
})

/** `data.channel` of `channel.created` and `channel.updated`: the spec's four fields plus the name. */
export const channelEventData = (record: ChannelRecord) => ({
  channel: {
    id: record.id,
    platform: record.platform,
    status: record.status,
    created_via_connect_token_id: record.created_via_connect_token_id,
    name: record.name
  }
})
