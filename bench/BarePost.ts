import { createHmac, createSecretKey } from "node:crypto"
import * as https from "node:https"
import * as tls from "node:tls"
import { Pool } from "undici"

/**
 * The HTTP clients a baseline can post with: Node's own `https` module, the one a bare loop is
 * usually written with, or undici, the one the library's guarded client posts with.
 */
export type PostClient = "node:https" | "undici"

/** A keep-alive HTTPS client with nothing else in the way: what the baselines post with. */
export interface BarePoster {
  /** POSTs `body` signed like a delivery (Standard Webhooks headers, id `messageId`); resolves to the status. */
  readonly post: (messageId: string, body: string) => Promise<number>
  readonly close: () => void
}

/** A signing key for the baselines, in the Standard Webhooks form the engine's secrets take. */
export const BASELINE_SECRET = `whsec_${Buffer.from("benchmark-baseline-signing-key").toString("base64")}`

/** One TLS context trusting Node's CAs and `ca`, as the guarded client keeps one rather than a `ca` option per request. */
const trusting = (ca: string) => tls.createSecureContext({ ca: [...tls.getCACertificates("default"), ca] })

// A KeyObject, as the engine's signer keeps one per secret: on Node 24 an HMAC keyed by a Buffer costs
// about 9 µs (the key is imported anew each time) against under 2 µs for a KeyObject.
const signingKey = createSecretKey(Buffer.from(BASELINE_SECRET.slice("whsec_".length), "base64"))

/** The Standard Webhooks headers of a delivery, signed with the baseline key. */
const signedHeaders = (messageId: string, body: string): Record<string, string> => {
  const timestamp = String(Math.floor(Date.now() / 1000))
  const signature = createHmac("sha256", signingKey).update(`${messageId}.${timestamp}.${body}`).digest("base64")
  return {
    "content-type": "application/json",
    "webhook-id": messageId,
    "webhook-timestamp": timestamp,
    "webhook-signature": `v1,${signature}`
  }
}

/** A poster to `url` trusting `ca` through `client`, with the engine's pool size (64 connections per origin). */
export const makeBarePoster = (url: string, ca: string, client: PostClient = "node:https"): BarePoster =>
  client === "undici" ? undiciPoster(url, ca) : nodePoster(url, ca)

const undiciPoster = (url: string, ca: string): BarePoster => {
  const target = new URL(url)
  // As the guarded client does: 64 connections, no pipelining, one TLS context.
  const pool = new Pool(target.origin, {
    connections: 64,
    pipelining: 1,
    connect: { secureContext: trusting(ca) }
  })
  return {
    post: async (messageId, body) => {
      const response = await pool.request({ method: "POST", path: target.pathname, headers: signedHeaders(messageId, body), body })
      await response.body.dump()
      return response.statusCode
    },
    close: () => void pool.destroy()
  }
}

const nodePoster = (url: string, ca: string): BarePoster => {
  const target = new URL(url)
  const agent = new https.Agent({
    keepAlive: true,
    maxSockets: 64,
    secureContext: trusting(ca)
  })
  return {
    post: (messageId, body) =>
      new Promise<number>((resolve, reject) => {
        const req = https.request({
          agent,
          method: "POST",
          host: target.hostname,
          port: target.port,
          path: target.pathname,
          headers: { ...signedHeaders(messageId, body), "content-length": Buffer.byteLength(body) }
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
