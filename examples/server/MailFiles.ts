import { randomUUID } from "node:crypto"
import { mkdir, writeFile } from "node:fs/promises"
import { join } from "node:path"
import { Effect } from "effect"
import type { Notifier } from "omnichannel-core"

// RFC 5322 header values must be ASCII; RFC 2047 encodes anything else.
const header = (value: string) =>
  /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, "utf8").toString("base64")}?=`

/**
 * A notifier that writes each message as an RFC 5322 file (`<dir>/<time>-<id>.eml`), the reference
 * host's stand-in for a mail server: tests and operators read what would have been sent.
 */
export const mailFileNotifier = (dir: string, from: string, now: () => Date = () => new Date()): Notifier["Service"] => ({
  send: (notification) =>
    Effect.promise(async () => {
      await mkdir(dir, { recursive: true })
      const date = now()
      const id = randomUUID()
      const message = [
        `From: ${from}`,
        `To: ${notification.to}`,
        `Subject: ${header(notification.subject)}`,
        `Date: ${date.toUTCString()}`,
        `Message-ID: <${id}@omnichannel-core.local>`,
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: 8bit",
        `X-Omni-Tenant-ID: ${notification.tenant_id}`,
        "",
        notification.text.replace(/\r?\n/g, "\r\n")
      ].join("\r\n")
      await writeFile(join(dir, `${date.toISOString().replace(/[:.]/g, "-")}-${id}.eml`), message)
    }).pipe(Effect.catchCause((cause) => Effect.logError("could not write notification", cause)))
})
