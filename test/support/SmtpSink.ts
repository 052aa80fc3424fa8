import type { AddressInfo } from "node:net"
import { type ParsedMail, simpleParser } from "mailparser"
import { SMTPServer } from "smtp-server"

/** One email the sink accepted: the SMTP envelope, the bytes as received, and mailparser's reading of them. */
export interface SunkMessage {
  readonly envelope: { readonly from: string; readonly to: ReadonlyArray<string> }
  readonly raw: Buffer
  readonly parsed: ParsedMail
}

export interface SmtpSink {
  /** `smtp://127.0.0.1:<port>`, no credentials needed. */
  readonly url: string
  /** The emails accepted so far, in the order their data ended. */
  readonly messages: () => ReadonlyArray<SunkMessage>
  /** Resolves once `count` emails were accepted (with all of them), rejects after `timeoutMs` (default 5 s). */
  readonly waitFor: (count: number, timeoutMs?: number) => Promise<ReadonlyArray<SunkMessage>>
  readonly close: () => Promise<void>
}

export interface SmtpSinkOptions {
  /** Recipients answered `550 5.1.1` at RCPT TO. */
  readonly rejectRecipients?: (address: string) => boolean
}

/**
 * A real SMTP server on 127.0.0.1 (a free port) that keeps what it receives: plain SMTP, no
 * STARTTLS, no authentication. A message is recorded before the server answers 250 to its data,
 * so when a client's send resolves, `messages()` already holds it. `cid:` links in the parsed HTML
 * are left as sent.
 */
export const startSmtpSink = async (options?: SmtpSinkOptions): Promise<SmtpSink> => {
  const received: Array<SunkMessage> = []
  const waiters = new Set<() => void>()

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    // Clients here close their connections; a stray one does not hold `close()` for 30 s.
    closeTimeout: 500,
    onRcptTo: (address, _session, callback) => {
      if (options?.rejectRecipients?.(address.address) === true) {
        const error = Object.assign(new Error(`5.1.1 <${address.address}>: recipient rejected`), { responseCode: 550 })
        return callback(error)
      }
      callback()
    },
    onData: (stream, session, callback) => {
      const chunks: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => chunks.push(chunk))
      stream.on("error", (error) => callback(error))
      stream.on("end", () => {
        const raw = Buffer.concat(chunks)
        simpleParser(raw, { keepCidLinks: true }).then(
          (parsed) => {
            const from = session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address
            received.push({ envelope: { from, to: session.envelope.rcptTo.map((to) => to.address) }, raw, parsed })
            for (const wake of waiters) wake()
            callback()
          },
          (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)))
        )
      })
    }
  })

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject)
      resolve()
    })
  })
  const { port } = server.server.address() as AddressInfo

  const waitFor = (count: number, timeoutMs = 5_000) =>
    new Promise<ReadonlyArray<SunkMessage>>((resolve, reject) => {
      if (received.length >= count) return resolve([...received])
      const wake = () => {
        if (received.length < count) return
        clearTimeout(timer)
        waiters.delete(wake)
        resolve([...received])
      }
      const timer = setTimeout(() => {
        waiters.delete(wake)
        reject(new Error(`the SMTP sink received ${received.length} of ${count} emails within ${timeoutMs} ms`))
      }, timeoutMs)
      waiters.add(wake)
    })

  return {
    url: `smtp://127.0.0.1:${port}`,
    messages: () => [...received],
    waitFor,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
