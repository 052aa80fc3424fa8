import { Effect, Layer, Option } from "effect"
import { type AttachmentOrigin, type AttachmentRecord, AttachmentStore } from "../../../src/ports/AttachmentStore.ts"
import { KyselyConnection, query } from "../Connection.ts"
import type { AttachmentsTable } from "../Database.ts"

const fromRow = (row: AttachmentsTable): AttachmentRecord => ({
  ...row,
  direction: row.direction === "outbound" ? "outbound" : "inbound",
  origin: row.origin as AttachmentOrigin,
  file_size: Number(row.file_size)
})

/** `AttachmentStore` on Kysely. */
export const attachmentStoreLayer: Layer.Layer<AttachmentStore, never, KyselyConnection> = Layer.effect(
  AttachmentStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return AttachmentStore.of({
      insert: (attachment) =>
        query(connection, (db) => db.insertInto("attachments").values(attachment).execute()).pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("attachments").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      listByMessages: (tenantId, messageIds) =>
        messageIds.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("attachments").selectAll().where("tenant_id", "=", tenantId)
            .where("message_id", "in", [...messageIds]).orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(fromRow))),
      attach: (tenantId, attachmentIds, messageId, conversationId) =>
        attachmentIds.length === 0 ? Effect.void : query(connection, (db) =>
          db.updateTable("attachments").set({ message_id: messageId, conversation_id: conversationId })
            .where("tenant_id", "=", tenantId).where("id", "in", [...attachmentIds]).execute())
          .pipe(Effect.asVoid)
    })
  })
)
