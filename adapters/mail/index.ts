/** `omnichannel-core/mail`: the Mailer port over SMTP (nodemailer) or as `.eml` files, and the MIME both of them write. */
export { composeMime } from "./MimeMessage.ts"
export { makeSmtpMailer, type SmtpMailer, type SmtpMailerOptions } from "./SmtpMailer.ts"
export { makeFileMailer } from "./FileMailer.ts"
// The port's types these signatures name, so an application can type against this entry alone.
export type { MailAddress, Mailer, MailerError, MailFile, MailSent, OutgoingMail } from "../../src/ports/Mailer.ts"
