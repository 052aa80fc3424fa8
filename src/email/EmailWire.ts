import { Effect } from "effect"
import { newId } from "../kernel/Id.ts"
import type { AttachmentRecord } from "../ports/AttachmentStore.ts"
import type { AttachmentService } from "../attachments/AttachmentService.ts"
import { NO_SUMMARY, type SummaryFields, type SummaryService } from "../summaries/SummaryService.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import type { EmailAttachmentRecord, EmailMessageRecord, EmailStore } from "../ports/EmailStore.ts"
import type { EmailAttachment, EmailMessage } from "./Email.ts"

/**
 * The spec's Email attachment of a stored file with its summary fields (for an inline image: no
 * summary, not available, no price).
 */
export const toEmailAttachment = (
  attachments: AttachmentService["Service"],
  record: EmailAttachmentRecord,
  summary: SummaryFields
): Effect.Effect<EmailAttachment> =>
  Effect.map(attachments.linkTo(record.tenant_id, record.attachment_id), (url) => ({
    id: record.id,
    attachment_id: record.is_inline ? null : record.attachment_id,
    filename: record.filename,
    content_type: record.content_type,
    file_size: record.file_size,
    is_inline: record.is_inline,
    content_id: record.content_id,
    url,
    ...summary
  }))

/**
 * The wire form of stored emails, each with its files (one read for all, one for their summaries).
 * Files of received emails may be summarized through their `attachment_id`; inline images and files of
 * emails the workspace sent never.
 */
export const toEmailMessages = (
  store: EmailStore["Service"],
  attachments: AttachmentService["Service"],
  summaries: SummaryService["Service"],
  records: ReadonlyArray<EmailMessageRecord>
): Effect.Effect<ReadonlyArray<EmailMessage>, StorageError> =>
  Effect.gen(function*() {
    if (records.length === 0) return []
    const files = yield* store.listAttachments(records[0]!.tenant_id, records.map((r) => r.id))
    const byEmail = new Map<string, Array<EmailAttachmentRecord>>()
    for (const file of files) {
      const list = byEmail.get(file.email_message_id) ?? []
      list.push(file)
      byEmail.set(file.email_message_id, list)
    }
    const inbound = new Set(records.filter((r) => r.direction === "inbound").map((r) => r.id))
    const offered = files.filter((file) => !file.is_inline)
    const fields = yield* summaries.fieldsFor(records[0]!.tenant_id, offered.map((file) => ({
      attachmentId: file.attachment_id,
      contentType: file.content_type,
      fileSize: file.file_size,
      inbound: inbound.has(file.email_message_id),
      offered: true
    })))
    const summaryOf = new Map(offered.map((file, i) => [file.id, fields[i]!]))
    return yield* Effect.forEach(records, (record) =>
      Effect.map(
        Effect.forEach(byEmail.get(record.id) ?? [], (file) => toEmailAttachment(attachments, file, summaryOf.get(file.id) ?? NO_SUMMARY)),
        (wire): EmailMessage => ({
          id: record.id,
          conversation_id: record.conversation_id,
          message_id: record.message_id,
          email_integration_id: record.integration_id,
          direction: record.direction,
          status: record.status,
          subject: record.subject,
          from: record.from,
          to: [...record.to],
          cc: [...record.cc],
          reply_to: [...record.reply_to],
          message_id_header: record.message_id_header,
          in_reply_to: record.in_reply_to,
          references: [...record.references],
          text_body: record.text_body,
          html_body: record.html_body,
          attachments: wire,
          error: record.error,
          sent_at: record.sent_at,
          created_at: record.created_at
        })
      ))
  })

/**
 * Stores the files of an email, in order: each an email attachment of its own id pointing at the
 * attachment record with its bytes, inline (with its Content-ID) or not.
 */
export const storeEmailFiles = (
  store: EmailStore["Service"],
  email: { readonly tenantId: string; readonly emailId: string; readonly at: string },
  files: ReadonlyArray<{ readonly record: AttachmentRecord; readonly inline: boolean; readonly contentId: string | null }>
): Effect.Effect<void, StorageError> =>
  Effect.gen(function*() {
    const rows: Array<EmailAttachmentRecord> = []
    for (const [position, file] of files.entries()) {
      rows.push({
        id: yield* newId,
        tenant_id: email.tenantId,
        email_message_id: email.emailId,
        attachment_id: file.record.id,
        filename: file.record.filename,
        content_type: file.record.content_type,
        file_size: file.record.file_size,
        is_inline: file.inline,
        content_id: file.contentId,
        position,
        created_at: email.at
      })
    }
    yield* store.insertAttachments(rows)
  })
