import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"

/** A web-standard handler, such as the one `make` returns. */
export type FetchHandler = (request: Request) => Promise<Response>

/** Turns a Node request into a web `Request`; the body streams through untouched. */
export const toRequest = (req: IncomingMessage, origin: string): Request => {
  const headers = new Headers()
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v)
  }
  const method = req.method ?? "GET"
  const hasBody = method !== "GET" && method !== "HEAD"
  return new Request(new URL(req.url ?? "/", origin), {
    method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : undefined,
    // Required by Node's fetch for a streamed request body.
    ...(hasBody ? { duplex: "half" } : {})
  } as RequestInit)
}

/**
 * Writes a web `Response` to a Node response, streaming its body no faster than the client reads
 * it; a client gone before the end cancels the body, so its source stops being read.
 */
export const writeResponse = async (response: Response, res: ServerResponse): Promise<void> => {
  res.statusCode = response.status
  response.headers.forEach((value, name) => res.appendHeader(name, value))
  if (response.body === null) {
    res.end()
    return
  }
  // pipeline pulls the next chunk only once `res` drains, and destroys the Readable (which
  // cancels the web stream) when `res` closes early.
  await pipeline(Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>), res)
}

/** A request body the handler left unread is read to its end when it declares at most this many bytes. */
const DRAIN_LIMIT_BYTES = 1024 * 1024

/**
 * What becomes of a body the handler left unread (a request refused before its body mattered: a
 * 401, a 403, a refused upload). A small one with a declared length is read to its end and thrown
 * away, so the client finishes sending, reads the answer and keeps the connection; a client cut off
 * mid-send may see its write fail before it reads the answer. A large or unannounced one is not
 * read: the connection closes after the answer, so a refused 100 MB upload costs little.
 */
const leaveUnreadBody = (req: IncomingMessage, res: ServerResponse, body: ReadableStream<Uint8Array> | null) => {
  const declared = Number(req.headers["content-length"])
  if (body !== null && !body.locked && Number.isFinite(declared) && declared <= DRAIN_LIMIT_BYTES) {
    body.pipeTo(new WritableStream()).catch(() => undefined)
    return
  }
  res.shouldKeepAlive = false
}

/** A Node `request` listener serving `handler`; a handler that throws is answered 500. */
export const toNodeListener = (handler: FetchHandler, origin = "http://localhost") =>
(req: IncomingMessage, res: ServerResponse): void => {
  const request = toRequest(req, origin)
  handler(request)
    .then((response) => {
      if (!req.complete) leaveUnreadBody(req, res, request.body)
      return writeResponse(response, res)
    })
    .catch(() => {
      if (!res.headersSent) {
        res.statusCode = 500
        res.setHeader("content-type", "application/json; charset=utf-8")
        res.end(JSON.stringify({ detail: "Internal server error" }))
      } else {
        res.destroy()
      }
    })
}

/** A listening server and how to stop it gracefully. */
export interface RunningServer {
  readonly server: Server
  /** `http://host:port` with the port actually bound. */
  readonly url: string
  /**
   * Stops accepting connections, lets in-flight requests finish (closing idle keep-alive
   * connections at once), and resolves when all are done or after `graceMs`, when the rest are cut.
   */
  readonly close: (graceMs?: number) => Promise<void>
}

/** Serves `handler` on `host:port` (port 0 picks a free one). */
export const serve = (
  handler: FetchHandler,
  options: { readonly port: number; readonly host: string }
): Promise<RunningServer> =>
  new Promise((resolve, reject) => {
    const listener = toNodeListener(handler, `http://${options.host}`)
    let closing = false
    const server = createServer((req, res) => {
      // Once closing, a keep-alive connection ends after its in-flight response instead of idling.
      res.once("finish", () => {
        if (closing) req.socket.end()
      })
      listener(req, res)
    })
    server.once("error", reject)
    server.listen(options.port, options.host, () => {
      const address = server.address() as AddressInfo
      const host = address.family === "IPv6" ? `[${address.address}]` : address.address
      resolve({
        server,
        url: `http://${host}:${address.port}`,
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
