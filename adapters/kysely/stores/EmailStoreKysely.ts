import { Effect, Layer, Option } from "effect"
import {
  type EmailAddressValue,
  type EmailAttachmentRecord,
  type EmailHeader,
  type EmailIntegrationRecord,
  type EmailMessageRecord,
  type EmailMessageStatus,
  EmailStore,
  type InlineImageRecord
} from "../../../src/ports/EmailStore.ts"
import { insertionOrder, KyselyConnection, query } from "../Connection.ts"
import type { EmailAttachmentsTable, EmailIntegrationsTable, EmailMessagesTable } from "../Database.ts"
import { fromFlag, toFlag } from "./Rows.ts"

const integrationFromRow = (row: EmailIntegrationsTable): EmailIntegrationRecord => ({
  ...row,
  status: row.status as EmailIntegrationRecord["status"]
})

// `seq` (PostgreSQL's insertion order) is a storage detail, not part of the record.
const messageFromRow = (
  {
    seq: _seq,
    reference_ids,
    from_address,
    to_addresses,
    cc_addresses,
    reply_to_addresses,
    headers,
    ...row
  }: EmailMessagesTable & { readonly seq?: unknown }
): EmailMessageRecord => ({
  ...row,
  direction: row.direction as EmailMessageRecord["direction"],
  status: row.status as EmailMessageStatus,
  references: JSON.parse(reference_ids) as ReadonlyArray<string>,
  from: from_address === null ? null : JSON.parse(from_address) as EmailAddressValue,
  to: JSON.parse(to_addresses) as ReadonlyArray<EmailAddressValue>,
  cc: JSON.parse(cc_addresses) as ReadonlyArray<EmailAddressValue>,
  reply_to: JSON.parse(reply_to_addresses) as ReadonlyArray<EmailAddressValue>,
  headers: JSON.parse(headers) as ReadonlyArray<EmailHeader>
})

const messageToRow = (
  { references, from, to, cc, reply_to, headers, ...message }: EmailMessageRecord
): EmailMessagesTable => ({
  ...message,
  reference_ids: JSON.stringify(references),
  from_address: from === null ? null : JSON.stringify(from),
  to_addresses: JSON.stringify(to),
  cc_addresses: JSON.stringify(cc),
  reply_to_addresses: JSON.stringify(reply_to),
  headers: JSON.stringify(headers)
})

const attachmentFromRow = (row: EmailAttachmentsTable): EmailAttachmentRecord => ({
  ...row,
  file_size: Number(row.file_size),
  is_inline: fromFlag(row.is_inline),
  position: Number(row.position)
})

const attachmentToRow = (attachment: EmailAttachmentRecord): EmailAttachmentsTable => ({
  ...attachment,
  is_inline: toFlag(attachment.is_inline)
})

/** `EmailStore` on Kysely. */
export const emailStoreLayer: Layer.Layer<EmailStore, never, KyselyConnection> = Layer.effect(
  EmailStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    return EmailStore.of({
      insertIntegration: (integration) =>
        query(connection, (db) => db.insertInto("email_integrations").values(integration).execute()).pipe(Effect.asVoid),
      getIntegration: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("email_integrations").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), integrationFromRow))),
      // Across tenants, by primary key: the inbound route knows only the id.
      findIntegrationForInbound: (id) =>
        query(connection, (db) => db.selectFrom("email_integrations").selectAll().where("id", "=", id).executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), integrationFromRow))),
      listIntegrations: (tenantId) =>
        query(connection, (db) =>
          db.selectFrom("email_integrations").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(integrationFromRow))),

      insertMessage: (message) =>
        query(connection, (db) => db.insertInto("email_messages").values(messageToRow(message)).execute()).pipe(Effect.asVoid),
      getMessage: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("email_messages").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), messageFromRow))),
      updateMessage: (tenantId, message) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = messageToRow(message)
        return query(connection, (db) =>
          db.updateTable("email_messages").set(changes).where("tenant_id", "=", tenantId).where("id", "=", message.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },
      // Read in the order of email_messages_conversation_created_idx.
      listByConversation: (tenantId, conversationId) =>
        query(connection, (db) =>
          db.selectFrom("email_messages").selectAll().where("tenant_id", "=", tenantId)
            .where("conversation_id", "=", conversationId)
            .orderBy("created_at").orderBy(insertionOrder(connection.dialect)).execute())
          .pipe(Effect.map((rows) => rows.map(messageFromRow))),
      // Through email_messages_integration_header_idx.
      findByHeaders: (tenantId, integrationId, headers) =>
        headers.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("email_messages").selectAll().where("tenant_id", "=", tenantId)
            .where("integration_id", "=", integrationId).where("message_id_header", "in", [...headers])
            .orderBy("created_at").orderBy(insertionOrder(connection.dialect)).execute())
          .pipe(Effect.map((rows) => rows.map(messageFromRow))),

      insertAttachments: (attachments) =>
        attachments.length === 0 ? Effect.void : query(connection, (db) =>
          db.insertInto("email_attachments").values(attachments.map(attachmentToRow)).execute())
          .pipe(Effect.asVoid),
      // Read in the order of email_attachments_message_position_idx.
      listAttachments: (tenantId, emailMessageIds) =>
        emailMessageIds.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("email_attachments").selectAll().where("tenant_id", "=", tenantId)
            .where("email_message_id", "in", [...emailMessageIds])
            .orderBy("email_message_id").orderBy("position").orderBy("id").execute())
          .pipe(Effect.map((rows) => rows.map(attachmentFromRow))),
      getAttachment: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("email_attachments").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), attachmentFromRow))),

      insertInlineImage: (image) =>
        query(connection, (db) => db.insertInto("email_inline_images").values(image).execute()).pipe(Effect.asVoid),
      findInlineImages: (tenantId, attachmentIds) =>
        attachmentIds.length === 0 ? Effect.succeed([]) : query(connection, (db) =>
          db.selectFrom("email_inline_images").selectAll().where("tenant_id", "=", tenantId)
            .where("attachment_id", "in", [...attachmentIds]).orderBy("attachment_id").execute())
          .pipe(Effect.map((rows): ReadonlyArray<InlineImageRecord> => rows))
    })
  })
)
