import { Context, type Effect, Schema } from "effect"

/** An address with an optional display name. */
export interface MailAddress {
  readonly address: string
  readonly name: string | null
}

/** A file of an outgoing email, its bytes read already (an email carries at most 20 MB of them). */
export interface MailFile {
  readonly filename: string
  readonly contentType: string
  readonly content: Uint8Array
  /**
   * Set for an image the HTML body shows (`cid:<contentId>`): it goes as an inline part of a
   * `multipart/related` body. Null: a regular file attachment (`Content-Disposition: attachment`).
   */
  readonly contentId: string | null
}

/**
 * An email the service sends, in terms of its content: the adapter turns it into MIME (multipart
 * alternative, related and mixed as needed, RFC 2047/2231 for non-ASCII text). Header values were
 * checked by the caller to hold no CR or LF; an adapter refuses them again rather than inject them.
 */
export interface OutgoingMail {
  readonly from: MailAddress
  readonly to: ReadonlyArray<MailAddress>
  readonly cc: ReadonlyArray<MailAddress>
  readonly subject: string
  /** The `Message-ID` the service chose, without angle brackets (`<id>@<domain>`): threads are found by it. */
  readonly messageId: string
  /** Without angle brackets; null for a new thread. */
  readonly inReplyTo: string | null
  /** Without angle brackets, oldest first. */
  readonly references: ReadonlyArray<string>
  readonly text: string
  readonly html: string | null
  readonly files: ReadonlyArray<MailFile>
  /** The `Date` header, as an ISO-8601 instant (the service's clock). */
  readonly date: string
}

/** What a mailer did with an email. */
export interface MailSent {
  /** Where it went: `smtp://host:port` or the path of the `.eml` file written. */
  readonly destination: string
  /** The server's answer (`250 OK …`), or null for a file. */
  readonly response: string | null
  /** Size of the RFC 5322 message in bytes. */
  readonly size: number
}

/**
 * An email could not be sent: `Refused` (the server rejected sender, recipients or message, or a
 * header held a line break: sending again will not help), `Unavailable` (no connection, timeout, a
 * temporary 4xx: sending again later may).
 */
export class MailerError extends Schema.TaggedError<MailerError>()("MailerError", {
  reason: Schema.Literals(["Refused", "Unavailable"]),
  message: Schema.String
}) {}

/** Sends email: over SMTP, or as RFC 5322 files (the reference host without `OMNI_SMTP_URL`). */
export class Mailer extends Context.Service<Mailer, {
  readonly send: (mail: OutgoingMail) => Effect.Effect<MailSent, MailerError>
}>()("omnichannel-core/ports/Mailer") {}
