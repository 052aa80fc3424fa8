import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/**
 * How an attachment's bytes came to the service: operator media, an upload, a from-url fetch, a file
 * of a received email, or an inline image of a received email (never offered as a file of its own).
 */
export type AttachmentOrigin = "chatapp_media" | "upload" | "url" | "email" | "email_inline"

/** A file's record; its bytes live in the blob store under `blob_key`. */
export interface AttachmentRecord {
  readonly id: string
  readonly tenant_id: string
  /** The message carrying it; null for an upload not yet sent. */
  readonly message_id: string | null
  readonly conversation_id: string | null
  /** `inbound` when a contact sent it, `outbound` when the workspace did. */
  readonly direction: "inbound" | "outbound"
  readonly origin: AttachmentOrigin
  readonly filename: string
  /** The type the bytes were checked to be. */
  readonly content_type: string
  readonly file_size: number
  readonly blob_key: string
  /** The operator's media id, for chat-app media. */
  readonly external_id: string | null
  readonly created_at: string
}

/** What `deleteUnsent` found: the record deleted, a record some message carries, or none. */
export type UnsentDeletion =
  | { readonly _tag: "Deleted"; readonly blob_key: string }
  | {
    readonly _tag: "Sent"
    /** The chat-app or email message carrying it; null when only a team chat message carries it. */
    readonly message_id: string | null
    readonly conversation_id: string | null
  }
  | { readonly _tag: "Missing" }

/** Attachment records; every method is scoped by tenant id (the prune, by its nature, is not). */
export class AttachmentStore extends Context.Service<AttachmentStore, {
  readonly insert: (attachment: AttachmentRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<AttachmentRecord>, StorageError>
  /** The attachments of these messages, in creation order. */
  readonly listByMessages: (
    tenantId: string,
    messageIds: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<AttachmentRecord>, StorageError>
  /** Points attachments at the message that carries them. */
  readonly attach: (
    tenantId: string,
    attachmentIds: ReadonlyArray<string>,
    messageId: string,
    conversationId: string
  ) => Effect.Effect<void, StorageError>
  /**
   * Deletes the tenant's attachment `id` (and its inline-image record) if nothing carries it: no
   * message (`message_id` null), no email's file list and no team chat message. One atomic unit,
   * joining the caller's transaction; a carried one is left as it is and reported `Sent`.
   */
  readonly deleteUnsent: (tenantId: string, id: string) => Effect.Effect<UnsentDeletion, StorageError>
  /**
   * The retention prune of uploads never sent: deletes up to `limit` attachments of any tenant made
   * by an upload or a URL fetch (`upload`, `url`) strictly before `before`, that nothing carries (as
   * `deleteUnsent`), oldest first, with their inline-image records, skipping rows another transaction
   * holds. Resolves to the deleted records' blob keys, for the caller to delete the bytes after.
   */
  readonly pruneUnsent: (before: string, limit: number) => Effect.Effect<ReadonlyArray<string>, StorageError>
}>()("omnichannel-core/ports/AttachmentStore") {}
