import { Schema } from "effect"
import { UuidId } from "../kernel/Id.ts"

/** A file carried by a message, as the API returns it; `url` is a signed link that expires. */
export const MessageAttachment = Schema.Struct({
  id: UuidId,
  filename: Schema.String,
  content_type: Schema.String,
  file_size: Schema.Int,
  url: Schema.String
})
/** A file carried by a message, as the API returns it. */
export type MessageAttachment = typeof MessageAttachment.Type
