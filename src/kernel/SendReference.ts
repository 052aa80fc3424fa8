import { isUuid } from "./Id.ts"

/**
 * A send's own reference to its message, handed to the chat-app operator as the send's
 * `biz_opaque_callback_data` and echoed back in each of its statuses. A status then names the message
 * even when the operator's answer to the send never came back (the sender died, or the answer was
 * lost): the message waiting for it can take the operator's id from the status.
 */
const PREFIX = "omnichannel-message:"

/** The reference a send of message `messageId` carries. */
export const sendReferenceOf = (messageId: string): string => `${PREFIX}${messageId}`

/** The message id `callbackData` names; null for anything else (another sender's data, none). */
export const messageIdOfReference = (callbackData: string | null): string | null => {
  if (callbackData === null || !callbackData.startsWith(PREFIX)) return null
  const id = callbackData.slice(PREFIX.length)
  return isUuid(id) ? id.toLowerCase() : null
}
