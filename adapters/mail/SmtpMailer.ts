import { Effect, Predicate } from "effect"
import { createTransport } from "nodemailer"
import { Mailer, MailerError, type OutgoingMail } from "../../src/ports/Mailer.ts"
import { composeMime } from "./MimeMessage.ts"

export interface SmtpMailerOptions {
  /** Bound on connecting, on the server's greeting and on each silence of the server (default 30 s). */
  readonly timeoutMs?: number
}

export interface SmtpMailer {
  readonly mailer: Mailer["Service"]
  /** Closes the transport; a send in progress still runs to its end. */
  readonly close: () => Promise<void>
}

interface SmtpTarget {
  readonly secure: boolean
  readonly host: string
  readonly port: number
  readonly user: string | null
  readonly pass: string | null
  /** `smtp://host:port` or `smtps://host:port`: where mail goes, without credentials. */
  readonly destination: string
}

const DEFAULT_TIMEOUT_MS = 30_000

/**
 * Reads `smtp://[user:pass@]host[:port]` (STARTTLS when the server offers it, port 587 by default)
 * or `smtps://[user:pass@]host[:port]` (TLS from the start, port 465 by default). Throws an Error
 * naming OMNI_SMTP_URL for anything else; the message never repeats the password.
 */
export const parseSmtpUrl = (url: string): SmtpTarget => {
  const invalid = (why: string) =>
    new Error(`OMNI_SMTP_URL must look like smtp://[user:pass@]host:port or smtps://[user:pass@]host:port: ${why}`)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw invalid("not a URL")
  }
  if (parsed.protocol !== "smtp:" && parsed.protocol !== "smtps:") {
    throw invalid(`the scheme is ${JSON.stringify(parsed.protocol.replace(/:$/, ""))}`)
  }
  if (parsed.hostname === "") throw invalid("no host")
  if (parsed.pathname !== "" && parsed.pathname !== "/") throw invalid("a path is not read")
  if (parsed.search !== "" || parsed.hash !== "") throw invalid("query and fragment are not read")
  const secure = parsed.protocol === "smtps:"
  const port = parsed.port === "" ? (secure ? 465 : 587) : Number(parsed.port)
  let user: string | null = null
  let pass: string | null = null
  try {
    user = parsed.username === "" ? null : decodeURIComponent(parsed.username)
    pass = parsed.password === "" ? null : decodeURIComponent(parsed.password)
  } catch {
    throw invalid("the credentials are not valid percent-encoding")
  }
  if (pass !== null && user === null) throw invalid("a password without a user")
  return {
    secure,
    // `[::1]` in a URL, `::1` for the socket.
    host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port,
    user,
    pass,
    destination: `${parsed.protocol}//${parsed.hostname}:${port}`
  }
}

const codeOf = (error: unknown): string | undefined =>
  Predicate.hasProperty(error, "code") && typeof error.code === "string" ? error.code : undefined
const responseCodeOf = (error: unknown): number | undefined =>
  Predicate.hasProperty(error, "responseCode") && typeof error.responseCode === "number" ? error.responseCode : undefined

/**
 * What a failed SMTP send means for the email. A reply code decides first: 5xx is "Refused"
 * (sending the same email again gets the same answer) except 503, a command out of sequence, which
 * a fresh connection may not meet; 4xx is "Unavailable". Without a reply code, an envelope or
 * message the client itself could not send (EENVELOPE: no or invalid recipients, EMESSAGE) is
 * "Refused". Everything else — no connection, DNS, TLS, timeout, a dropped connection, failed
 * authentication (fixed by the operator, not by the email) — is "Unavailable".
 */
export const smtpFailureReason = (error: unknown): MailerError["reason"] => {
  const code = codeOf(error)
  const responseCode = responseCodeOf(error)
  if (code === "EAUTH" || code === "ENOAUTH") return "Unavailable"
  if (responseCode !== undefined) {
    return responseCode >= 500 && responseCode < 600 && responseCode !== 503 ? "Refused" : "Unavailable"
  }
  return code === "EENVELOPE" || code === "EMESSAGE" ? "Refused" : "Unavailable"
}

const describe = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error)
  const code = codeOf(error)
  return code === undefined ? message : `${message} (${code})`
}

/**
 * Sends each email over SMTP as the MIME `composeMime` builds, on a connection of its own (no
 * pool: a connection lost after the data was sent is never retried behind the caller's back). The
 * envelope is the From address and every To and Cc address; a Cc that repeats a To is sent once.
 *
 * When the server accepts some recipients and rejects others, the email counts as sent (sending it
 * again would reach the accepted ones twice); `response` is the server's final answer.
 *
 * Throws an Error naming OMNI_SMTP_URL when `url` is not an `smtp://` or `smtps://` URL.
 */
export const makeSmtpMailer = (url: string, options?: SmtpMailerOptions): SmtpMailer => {
  const target = parseSmtpUrl(url)
  const timeoutMs = options?.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const transport = createTransport({
    host: target.host,
    port: target.port,
    secure: target.secure,
    auth: target.user === null ? undefined : { user: target.user, pass: target.pass ?? "" },
    connectionTimeout: timeoutMs,
    greetingTimeout: timeoutMs,
    socketTimeout: timeoutMs,
    dnsTimeout: timeoutMs,
    disableFileAccess: true,
    disableUrlAccess: true,
    logger: false
  })

  const deliver = async (mail: OutgoingMail) => {
    const raw = await composeMime(mail)
    const recipients = [...new Set([...mail.to, ...mail.cc].map((to) => to.address))]
    if (recipients.length === 0) {
      throw new MailerError({ reason: "Refused", message: "Email refused before sending: no To or Cc recipient" })
    }
    const info = await transport.sendMail({
      envelope: { from: mail.from.address, to: recipients },
      raw: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength)
    }).catch((error: unknown) => {
      throw new MailerError({
        reason: smtpFailureReason(error),
        message: `SMTP server ${target.destination}: ${describe(error)}`
      })
    })
    return { destination: target.destination, response: info.response, size: raw.byteLength }
  }

  return {
    mailer: Mailer.of({
      send: (mail) =>
        Effect.tryPromise({
          try: () => deliver(mail),
          catch: (error) =>
            error instanceof MailerError
              ? error
              : new MailerError({ reason: "Unavailable", message: `SMTP server ${target.destination}: ${describe(error)}` })
        })
    }),
    close: async () => {
      transport.close()
    }
  }
}
