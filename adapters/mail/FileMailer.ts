import { randomBytes, randomUUID } from "node:crypto"
import { mkdir, rename, rm, writeFile } from "node:fs/promises"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import { Mailer, MailerError, type OutgoingMail } from "../../src/ports/Mailer.ts"
import { composeMime } from "./MimeMessage.ts"

/**
 * Writes each email as an RFC 5322 file `<dir>/<Date of the email, ":" and "." as "-">-<random>.eml`
 * (for a host without an SMTP server: the files open in any mail client). The file appears whole or
 * not at all: it is written under a temporary name in the same directory, flushed, then renamed; a
 * failed write removes the temporary file. The directory is created when missing.
 */
export const makeFileMailer = (dir: string): Mailer["Service"] => {
  const root = resolve(dir)

  const write = async (mail: OutgoingMail) => {
    const raw = await composeMime(mail)
    await mkdir(root, { recursive: true })
    const stamp = new Date(mail.date).toISOString().replace(/[:.]/g, "-")
    const path = join(root, `${stamp}-${randomBytes(6).toString("hex")}.eml`)
    const temporary = join(root, `.${randomUUID()}.eml.partial`)
    try {
      await writeFile(temporary, raw, { flag: "wx", flush: true })
      await rename(temporary, path)
    } catch (error) {
      await rm(temporary, { force: true })
      throw error
    }
    return { destination: path, response: null, size: raw.byteLength }
  }

  return Mailer.of({
    send: (mail) =>
      Effect.tryPromise({
        try: () => write(mail),
        catch: (error) =>
          error instanceof MailerError
            ? error
            : new MailerError({
              reason: "Unavailable",
              message: `Could not write the email to ${root}: ${error instanceof Error ? error.message : String(error)}`
            })
      })
  })
}
