import { Option } from "effect"

/** The operator ids and token a connected chat-app channel holds, shaped as the `ChatPlatform` port takes them. */
export interface ChatappChannelCredentials {
  readonly phoneNumberId: string
  readonly businessAccountId: string
  readonly accessToken: string
}

/**
 * What the service holds to act for a chat-app channel, read from its stored config and secrets;
 * none when the channel is not a chat-app one or lacks its business account or token.
 */
export const chatappCredentialsOf = (channel: {
  readonly platform: string
  readonly external_id: string
  readonly config: Readonly<Record<string, string>>
  readonly secrets: Readonly<Record<string, string>>
}): Option.Option<ChatappChannelCredentials> => {
  const phoneNumberId = channel.config.phone_number_id ?? channel.external_id
  const businessAccountId = channel.config.business_account_id
  const accessToken = channel.secrets.access_token
  if (channel.platform !== "chatapp" || !phoneNumberId || !businessAccountId || !accessToken) return Option.none()
  return Option.some({ phoneNumberId, businessAccountId, accessToken })
}
