import { Schema } from "effect"

/** The channel types a customer can connect, shared vocabulary of every area (the spec's neutral names). */
export const CHANNEL_TYPES = [
  "botchat",
  "chatapp",
  "photosocial",
  "socialmsg",
  "webmail",
  "smtp_imap",
  "relay_a_byok",
  "relay_b_byok",
  "relay_a_managed",
  "sms"
] as const

/** A channel type such as `chatapp`. */
export type ChannelType = typeof CHANNEL_TYPES[number]

/** Schema of a channel type. */
export const ChannelType = Schema.Literals(CHANNEL_TYPES)

/** True when `value` names a channel type. */
export const isChannelType = (value: string): value is ChannelType =>
  (CHANNEL_TYPES as ReadonlyArray<string>).includes(value)

/** What the connect page calls each type. */
export const CHANNEL_TYPE_LABELS: Readonly<Record<ChannelType, string>> = {
  botchat: "Bot chat app",
  chatapp: "Chat app (business platform)",
  photosocial: "Photo social network",
  socialmsg: "Social messenger",
  webmail: "Web mail",
  smtp_imap: "Email (IMAP and SMTP)",
  relay_a_byok: "SMS relay A (your own account)",
  relay_b_byok: "SMS relay B (your own account)",
  relay_a_managed: "SMS relay A (managed for you)",
  sms: "SMS"
}
