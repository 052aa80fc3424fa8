/**
 * The inbound benchmark's baseline, run as a child process: a bare `node:http` server that reads
 * the body, checks `X-Hub-Signature-256` (HMAC-SHA256 of the raw body with the app secret, compared
 * with `timingSafeEqual`) and answers 200 with the body the host answers (`{"received":true}`), or
 * 401. It stores nothing. Driven over IPC by `InboundServers.ts`.
 */
import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

/** What the bare server is asked; each carries the `id` its reply echoes. */
export type BareRequest = { readonly id: number } & (
  | { readonly type: "listen"; readonly secret: string }
  | { readonly type: "close" }
)

/** What the bare server answers. */
export type BareReply = { readonly id: number; readonly type: "listening"; readonly port: number }

const HEX = /^[0-9a-f]{64}$/i
const ACCEPTED = '{"received":true}'

const verified = (key: KeyObject, header: string | string[] | undefined, body: Buffer): boolean => {
  if (typeof header !== "string" || !header.startsWith("sha256=")) return false
  const hex = header.slice("sha256=".length).trim()
  if (!HEX.test(hex)) return false
  return timingSafeEqual(Buffer.from(hex, "hex"), createHmac("sha256", key).update(body).digest())
}

let server: http.Server | undefined

const listen = (secret: string, reply: (port: number) => void) => {
  const key = createSecretKey(Buffer.from(secret, "utf8"))
  server = http.createServer({ keepAliveTimeout: 30_000 }, (req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      if (verified(key, req.headers["x-hub-signature-256"], Buffer.concat(chunks))) {
        res.writeHead(200, { "content-type": "application/json" }).end(ACCEPTED)
      } else {
        res.writeHead(401, { "content-type": "application/json" }).end('{"detail":"Invalid signature"}')
      }
    })
  })
  server.listen(0, "127.0.0.1", () => reply((server?.address() as AddressInfo).port))
}

process.on("message", (message: BareRequest) => {
  switch (message.type) {
    case "listen":
      return listen(message.secret, (port) => process.send?.({ id: message.id, type: "listening", port } satisfies BareReply))
    case "close":
      server?.closeAllConnections()
      server?.close(() => process.exit(0))
  }
})
process.on("disconnect", () => process.exit(0))
