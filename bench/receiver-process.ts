/**
 * The benchmark's webhook receiver, run as a child process so every contender posts to the same
 * server on its own core: HTTPS on 127.0.0.1, answers 204 (or 503 when told to fail), and records
 * when each message id first arrived. Driven over IPC by `Receiver.ts`.
 */
import type * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import type { ReceiverReply, ReceiverRequest } from "./Receiver.ts"

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
const stamp = () => performance.timeOrigin + performance.now()

let status = 204
let arrivals = new Map<string, number>()
let duplicates = 0
let lastAt = 0

const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
  const at = stamp()
  const chunks: Array<Buffer> = []
  req.on("data", (chunk: Buffer) => chunks.push(chunk))
  req.on("end", () => {
    const id = req.headers["webhook-id"]
    // Verification checks share the endpoint but are not events of the run.
    const verification = Buffer.concat(chunks).includes('"type":"webhook.verification"')
    if (status < 300 && typeof id === "string" && !verification) {
      if (arrivals.has(id)) duplicates += 1
      else {
        arrivals.set(id, at)
        lastAt = at
      }
    }
    res.writeHead(status).end()
  })
}
let server: https.Server | undefined

const reply = (message: ReceiverReply) => process.send?.(message)

process.on("message", (message: ReceiverRequest) => {
  switch (message.type) {
    case "listen":
      server = https.createServer({ key: message.key, cert: message.cert, keepAliveTimeout: 30_000 }, listener)
      server.listen(0, "127.0.0.1", () =>
        reply({ id: message.id, type: "listening", port: (server?.address() as AddressInfo).port }))
      return
    case "status":
      status = message.status
      return reply({ id: message.id, type: "ok" })
    case "reset":
      arrivals = new Map()
      duplicates = 0
      lastAt = 0
      return reply({ id: message.id, type: "ok" })
    case "count":
      return reply({ id: message.id, type: "count", unique: arrivals.size, duplicates, lastAt })
    case "arrivals":
      return reply({ id: message.id, type: "arrivals", arrivals: [...arrivals] })
    case "close":
      server?.closeAllConnections()
      server?.close(() => process.exit(0))
  }
})
process.on("disconnect", () => process.exit(0))
