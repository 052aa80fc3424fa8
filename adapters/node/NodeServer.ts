import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import type { DirectRoute } from "../../src/kernel/DirectRoute.ts"
import { type FetchHandler, toCheckContinueListener, toNodeListener } from "./NodeListener.ts"

// The server `serve` runs: Node's http server around `toNodeListener`, with the limits a service
// exposed to the internet needs (request timeout, keep-alive timeout, connection cap) and a graceful close.

/** How a served listener protects itself from slow or too many clients. */
export interface ServeLimits {
  /**
   * A request whose headers and body have not fully arrived this long after it began is answered
   * 408 and its connection closed. 30 s by default; 0 turns the limit off.
   */
  readonly requestTimeoutMs?: number
  /** An idle keep-alive connection is closed after this long; 5 s by default. */
  readonly keepAliveTimeoutMs?: number
  /**
   * Open client connections at most; a connection past it is answered `503` with `Retry-After` and
   * closed, without reaching the handler. 1,000 by default.
   */
  readonly maxConnections?: number
}

/** A listening server and how to stop it gracefully. */
export interface RunningServer {
  readonly server: Server
  /** `http://host:port` with the port actually bound. */
  readonly url: string
  /** Open client connections now, refused ones not counted. */
  readonly connections: () => number
  /**
   * Stops accepting connections, lets in-flight requests finish (closing idle keep-alive
   * connections at once), and resolves when all are done or after `graceMs`, when the rest are cut.
   */
  readonly close: (graceMs?: number) => Promise<void>
}

const OVERLOADED_BODY = JSON.stringify({ detail: { code: "overloaded", message: "Too many open connections; retry shortly" } })
const OVERLOADED_ANSWER = "HTTP/1.1 503 Service Unavailable\r\n" +
  "content-type: application/json; charset=utf-8\r\n" +
  `content-length: ${Buffer.byteLength(OVERLOADED_BODY)}\r\n` +
  "retry-after: 1\r\nconnection: close\r\n\r\n" + OVERLOADED_BODY

/** How long a refused connection is still read from after its 503, so the client can read it (see `answerUnreadBody` in NodeListener.ts). */
const REFUSED_LINGER_MS = 1_000

/** Answers a connection past the cap with a 503 a client can read, then closes it. */
const refuseConnection = (socket: Socket) => {
  socket.on("error", () => undefined)
  socket.end(OVERLOADED_ANSWER)
  // Read and drop whatever the client sends meanwhile, so the close does not reset the answer away.
  socket.resume()
  setTimeout(() => socket.destroy(), REFUSED_LINGER_MS).unref()
}

/**
 * Serves `handler` on `host:port` (port 0 picks a free one) with a request timeout, a keep-alive
 * timeout and a connection cap (`ServeLimits`), `100 Continue` only once a body is read, and every
 * failure of a request kept inside that request.
 */
export const serve = (
  handler: FetchHandler,
  options: {
    readonly port: number
    readonly host: string
    /**
     * Routes served without a web `Request` and `Response` (`Omnichannel.directRoutes`); the handler
     * still answers every other request to their paths. None by default.
     */
    readonly direct?: ReadonlyArray<DirectRoute>
  } & ServeLimits
): Promise<RunningServer> =>
  new Promise((resolve, reject) => {
    const listener = toNodeListener(handler, `http://${options.host}`, options.direct)
    const requestTimeout = options.requestTimeoutMs ?? 30_000
    const maxConnections = options.maxConnections ?? 1_000
    let closing = false
    const onRequest = (req: IncomingMessage, res: ServerResponse) => {
      // Once closing, a keep-alive connection ends after its in-flight response instead of idling.
      res.once("finish", () => {
        if (closing) req.socket.end()
      })
      listener(req, res)
    }
    const server = createServer({
      requestTimeout,
      headersTimeout: requestTimeout,
      keepAliveTimeout: options.keepAliveTimeoutMs ?? 5_000,
      // How often timeouts are checked; Node's 30 s default would let a request overstay by as much.
      connectionsCheckingInterval: requestTimeout === 0 ? 30_000 : Math.max(100, Math.min(1_000, requestTimeout / 10))
    }, onRequest)
    server.on("checkContinue", toCheckContinueListener(onRequest))
    // The cap stands in front of Node's own connection handling, which a refused socket never reaches.
    let open = 0
    const httpConnection = server.listeners("connection")[0] as (socket: Socket) => void
    server.removeAllListeners("connection")
    server.on("connection", (socket: Socket) => {
      if (open >= maxConnections) return refuseConnection(socket)
      open++
      socket.once("close", () => open--)
      httpConnection.call(server, socket)
    })
    server.once("error", reject)
    server.listen(options.port, options.host, () => {
      const address = server.address() as AddressInfo
      const host = address.family === "IPv6" ? `[${address.address}]` : address.address
      resolve({
        server,
        url: `http://${host}:${address.port}`,
        connections: () => open,
        close: (graceMs = 10_000) =>
          new Promise<void>((done) => {
            closing = true
            const timer = setTimeout(() => server.closeAllConnections(), graceMs)
            server.close(() => {
              clearTimeout(timer)
              done()
            })
            server.closeIdleConnections()
          })
      })
    })
  })
