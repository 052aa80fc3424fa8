import MailComposer, { type MailComposerAttachment, type MailComposerOptions } from "nodemailer/lib/mail-composer"
import { EMAIL_PATTERN } from "../../src/kernel/Email.ts"
import { type MailAddress, MailerError, type OutgoingMail } from "../../src/ports/Mailer.ts"

const LINE_BREAK = /[\r\n]/
// Characters that would end or split an address inside a header (`Name <a@b>, c@d`).
const ADDRESS_SPECIALS = /[<>(),;:"\\[\]]/
// A msg-id without its angle brackets: one token, no whitespace, no brackets, no controls.
const MESSAGE_ID = /^[^\s<>\p{Cc}]+$/u

const refused = (message: string) => new MailerError({ reason: "Refused", message })

/**
 * Why `mail` cannot be turned into MIME as it is, or null. Every value that becomes a header (or a
 * header parameter) is checked for CR and LF: such a value is refused, never cleaned, so no header
 * can be injected and nothing is sent that differs from what the caller asked for.
 */
export const mailRefusal = (mail: OutgoingMail): string | null => {
  const address = (field: string, value: MailAddress): string | null => {
    if (LINE_BREAK.test(value.address) || (value.name !== null && LINE_BREAK.test(value.name))) {
      return `${field} holds a line break`
    }
    if (!EMAIL_PATTERN.test(value.address) || ADDRESS_SPECIALS.test(value.address)) {
      return `${field} is not a single email address: ${JSON.stringify(value.address)}`
    }
    return null
  }
  const messageId = (field: string, value: string): string | null => {
    if (LINE_BREAK.test(value)) return `${field} holds a line break`
    if (!MESSAGE_ID.test(value)) return `${field} is not a message id without angle brackets: ${JSON.stringify(value)}`
    return null
  }

  const checks: Array<string | null> = [
    address("From", mail.from),
    ...mail.to.map((to, i) => address(`To[${i}]`, to)),
    ...mail.cc.map((cc, i) => address(`Cc[${i}]`, cc)),
    LINE_BREAK.test(mail.subject) ? "Subject holds a line break" : null,
    messageId("Message-ID", mail.messageId),
    mail.inReplyTo === null ? null : messageId("In-Reply-To", mail.inReplyTo),
    ...mail.references.map((id, i) => messageId(`References[${i}]`, id)),
    Number.isNaN(Date.parse(mail.date)) ? `Date is not an instant: ${JSON.stringify(mail.date)}` : null,
    ...mail.files.flatMap((file, i) => [
      LINE_BREAK.test(file.filename) ? `the filename of file ${i} holds a line break` : null,
      LINE_BREAK.test(file.contentType) ? `the content type of file ${i} holds a line break` : null,
      file.contentId === null ? null : messageId(`the Content-ID of file ${i}`, file.contentId)
    ])
  ]
  return checks.find((check) => check !== null) ?? null
}

const toAddress = (value: MailAddress) => ({ name: value.name ?? "", address: value.address })

/**
 * The RFC 5322 message for `mail`, built by nodemailer's MailComposer: `multipart/alternative` for
 * text and HTML, `multipart/related` for the HTML and the files it shows by `cid:`, and
 * `multipart/mixed` for regular attachments; non-ASCII header text as RFC 2047 encoded words and
 * non-ASCII filenames as RFC 2231 parameters. Nothing is read from a path or URL: the content is
 * the bytes given.
 *
 * Rejects with a `MailerError` "Refused" when a header value holds a line break, an address is not
 * a single address, an id is not a bare message id, or the date is not an instant.
 */
export const composeMime = async (mail: OutgoingMail): Promise<Uint8Array> => {
  const refusal = mailRefusal(mail)
  if (refusal !== null) throw refused(`Email refused before sending: ${refusal}`)

  const attachments: Array<MailComposerAttachment> = mail.files.map((file) =>
    file.contentId === null
      ? {
        filename: file.filename,
        contentType: file.contentType,
        content: Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength),
        contentDisposition: "attachment"
      }
      : {
        filename: file.filename,
        contentType: file.contentType,
        content: Buffer.from(file.content.buffer, file.content.byteOffset, file.content.byteLength),
        contentDisposition: "inline",
        cid: file.contentId
      }
  )
  const options: MailComposerOptions = {
    from: toAddress(mail.from),
    to: mail.to.map(toAddress),
    cc: mail.cc.length === 0 ? undefined : mail.cc.map(toAddress),
    subject: mail.subject,
    messageId: mail.messageId,
    inReplyTo: mail.inReplyTo ?? undefined,
    references: mail.references.length === 0 ? undefined : [...mail.references],
    date: new Date(mail.date),
    text: mail.text,
    html: mail.html ?? undefined,
    attachments,
    disableFileAccess: true,
    disableUrlAccess: true,
    newline: "win"
  }
  const message = await new MailComposer(options).compile().build()
  return new Uint8Array(message.buffer, message.byteOffset, message.byteLength)
}
