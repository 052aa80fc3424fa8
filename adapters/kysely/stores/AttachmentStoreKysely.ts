import { Effect, Layer, Option } from "effect"
import { sql } from "kysely"
import { type AttachmentOrigin, type AttachmentRecord, AttachmentStore, type UnsentDeletion } from "../../../src/ports/AttachmentStore.ts"
import { atomically, KyselyConnection, query } from "../Connection.ts"
import type { AttachmentsTable, Db } from "../Database.ts"

const fromRow = (row: AttachmentsTable): AttachmentRecord => ({
  ...row,
  direction: row.direction === "outbound" ? "outbound" : "inbound",
  origin: row.origin as AttachmentOrigin,
  file_size: Number(row.file_size)
})

/** The origins of files a workspace brought itself, which wait for a send; the others arrive with their message. */
const UNSENT_ORIGINS = ["upload", "url"] as const

/** What carries attachment `id` besides a message: an email's file list or a team chat message. */
const otherCarrier = async (db: Db, tenantId: string, id: string): Promise<boolean> => {
  const team = await db.selectFrom("team_chat_message_attachments").select("attachment_id").where("attachment_id", "=", id)
    .executeTakeFirst()
  if (team !== undefined) return true
  const email = await db.selectFrom("email_attachments").select("id").where("tenant_id", "=", tenantId)
    .where("attachment_id", "=", id).limit(1).executeTakeFirst()
  return email !== undefined
}

/** `AttachmentStore` on Kysely. */
export const attachmentStoreLayer: Layer.Layer<AttachmentStore, never, KyselyConnection> = Layer.effect(
  AttachmentStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const postgres = connection.dialect === "postgres"
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
          .pipe(Effect.asVoid),
      deleteUnsent: (tenantId, id) =>
        atomically(connection, async (db): Promise<UnsentDeletion> => {
          // Locked on PostgreSQL: a send pointing a message at it waits, then finds it gone.
          const row = await db.selectFrom("attachments").select(["message_id", "conversation_id", "blob_key"])
            .where("tenant_id", "=", tenantId).where("id", "=", id)
            .$if(postgres, (q) => q.forUpdate()).executeTakeFirst()
          if (row === undefined) return { _tag: "Missing" }
          if (row.message_id !== null) return { _tag: "Sent", message_id: row.message_id, conversation_id: row.conversation_id }
          if (await otherCarrier(db, tenantId, id)) return { _tag: "Sent", message_id: null, conversation_id: null }
          await db.deleteFrom("email_inline_images").where("tenant_id", "=", tenantId).where("attachment_id", "=", id).execute()
          await db.deleteFrom("attachments").where("tenant_id", "=", tenantId).where("id", "=", id).execute()
          return { _tag: "Deleted", blob_key: row.blob_key }
        }),
      // Through `attachments_unsent_idx` (migration 0022), which holds only rows no message carries.
      pruneUnsent: (before, limit) =>
        atomically(connection, async (db) => {
          const picked = await db.selectFrom("attachments as a").select("a.id")
            .where("a.message_id", "is", null)
            .where("a.created_at", "<", before)
            .where("a.origin", "in", [...UNSENT_ORIGINS])
            .where((eb) =>
              eb.not(eb.exists(
                eb.selectFrom("team_chat_message_attachments as t").select(sql.lit(1).as("one")).whereRef("t.attachment_id", "=", "a.id")
              ))
            )
            .where((eb) =>
              eb.not(eb.exists(
                eb.selectFrom("email_attachments as ea").select(sql.lit(1).as("one"))
                  .whereRef("ea.attachment_id", "=", "a.id").whereRef("ea.tenant_id", "=", "a.tenant_id")
              ))
            )
            .orderBy("a.created_at").limit(limit)
            .$if(postgres, (q) => q.forUpdate().skipLocked())
            .execute()
          if (picked.length === 0) return []
          const ids = picked.map((row) => row.id)
          await db.deleteFrom("email_inline_images").where("attachment_id", "in", ids).execute()
          const gone = await db.deleteFrom("attachments").where("id", "in", ids).where("message_id", "is", null)
            .returning("blob_key").execute()
          return gone.map((row) => row.blob_key)
        })
    })
  })
)
