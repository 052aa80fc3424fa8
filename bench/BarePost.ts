import { createHmac } from "node:crypto"
import * as https from "node:https"
import * as tls from "node:tls"

/** A keep-alive HTTPS client with nothing else in the way: what the baselines post with. */
export interface BarePoster {
  /** POSTs `body` signed like a delivery (Standard Webhooks headers, id `messageId`); resolves to the status. */
  readonly post: (messageId: string, body: string) => Promise<number>
  readonly close: () => void
}

/** A signing key for the baselines, in the Standard Webhooks form the engine's secrets take. */
export const BASELINE_SECRET = `whsec_${Buffer.from("benchmark-baseline-signing-key").toString("base64")}`

/** A poster to `url` trusting `ca`, with the engine's pool size (64 sockets per origin). */
export const makeBarePoster = (url: string, ca: string): BarePoster => {
  const target = new URL(url)
  const key = Buffer.from(BASELINE_SECRET.slice("whsec_".length), "base64")
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: 64,
    // As the guarded client does: one context, rather than a `ca` option folded into every request.
    secureContext: tls.createSecureContext({ ca: [...tls.getCACertificates("default"), ca] })
  })
  return {
    post: (messageId, body) =>
      new Promise<number>((resolve, reject) => {
        const timestamp = String(Math.floor(Date.now() / 1000))
        const signature = createHmac("sha256", key).update(`${messageId}.${timestamp}.${body}`).digest("base64")
        const req = https.request({
          agent,
          method: "POST",
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
            "webhook-id": messageId,
            "webhook-timestamp": timestamp,
            "webhook-signature": `v1,${signature}`
          }
        }, (res) => {
          res.resume()
          res.on("end", () => resolve(res.statusCode ?? 0))
        })
        req.on("error", reject)
        req.end(body)
      }),
    close: () => agent.destroy()
  }
}

/** POSTs each `[id, body]` with at most `concurrency` in flight, the way a bare keep-alive loop would. */
export const postAll = async (
  poster: BarePoster,
  messages: ReadonlyArray<readonly [string, string]>,
  concurrency: number
): Promise<void> => {
  let next = 0
  const lane = async () => {
    for (let i = next++; i < messages.length; i = next++) {
      const [id, body] = messages[i]!
      await poster.post(id, body)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane))
}
