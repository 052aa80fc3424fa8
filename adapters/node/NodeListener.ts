import type { IncomingMessage, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import type { DirectAnswer, DirectRoute } from "../../src/kernel/DirectRoute.ts"

/** A web-standard handler, such as the one `make` returns. */
export type FetchHandler = (request: Request) => Promise<Response>

/**
 * Responses whose client sent `Expect: 100-continue` and was not told to go on yet (the server's
 * `checkContinue` event, see `toCheckContinueListener`): `100 Continue` goes out only when the
 * handler first reads the body, so a request refused before that (401, a declared length over the
 * limit) is answered before the client sends a byte of it.
 */
const continuePending = new WeakSet<ServerResponse>()

/** The request body as a pull-driven web stream: nothing is read from the socket until it is pulled. */
interface BodyBridge {
  readonly stream: ReadableStream<Uint8Array>
  /** Whether the handler ever asked for a byte of the body. */
  readonly pulled: () => boolean
  /** Stops serving the stream (the answer is on its way); a pending or later read fails. */
  readonly detach: () => void
}

/** Swallows an error: one function for every listener and promise that must not throw unheard. */
const ignore = (): undefined => undefined

const view = (chunk: Buffer): Uint8Array => new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)

/**
 * The bridge reads `req` with `read()` as the consumer pulls, one chunk a pull, and never enqueues
 * after the stream closed, was cancelled or was detached (Node's own `Readable.toWeb` adapter can
 * enqueue a late chunk into a cancelled stream and throw outside any handler, ending the process).
 */
const bridgeBody = (req: IncomingMessage, res: ServerResponse): BodyBridge => {
  let pulled = false
  let finished = false
  let failure: Error | undefined
  let wake: (() => void) | undefined
  const notify = () => {
    const resume = wake
    wake = undefined
    resume?.()
  }
  const onEnd = () => notify()
  const onClose = () => {
    if (!req.readableEnded) failure ??= new Error("the client closed the connection before the body ended")
    notify()
  }
  const onError = (error: Error) => {
    failure ??= error
    notify()
  }
  req.on("readable", notify)
  req.on("end", onEnd)
  req.on("close", onClose)
  req.on("error", onError)
  const release = () => {
    finished = true
    req.removeListener("readable", notify)
    req.removeListener("end", onEnd)
    req.removeListener("close", onClose)
    // An error listener stays: a request stream that errors later must never throw unhandled.
    notify()
  }
  const stream = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        if (!pulled) {
          pulled = true
          if (continuePending.delete(res) && !res.headersSent) res.writeContinue()
        }
        for (;;) {
          if (finished) {
            controller.error(new Error("the request body is no longer readable: the answer was already sent"))
            return
          }
          const chunk = req.read() as Buffer | null
          if (chunk !== null) {
            controller.enqueue(view(chunk))
            return
          }
          if (req.readableEnded) {
            release()
            controller.close()
            return
          }
          if (failure !== undefined) {
            release()
            controller.error(failure)
            return
          }
          await new Promise<void>((resolve) => {
            wake = resolve
          })
        }
      },
      cancel: () => release()
    },
    { highWaterMark: 0 }
  )
  return { stream, pulled: () => pulled, detach: release }
}

/**
 * Turns a Node request into a web `Request`; the body streams through untouched, read from the
 * socket only as it is pulled. Throws on a request target that is no URL.
 */
export const toRequest = (req: IncomingMessage, origin: string, body?: ReadableStream<Uint8Array>): Request => {
  // Pairs, not a Headers: the Request copies what it is given, so a Headers would be built twice.
  const headers: Array<[string, string]> = []
  const given = req.headers
  for (const name in given) {
    const value = given[name]
    if (typeof value === "string") headers.push([name, value])
    else if (value !== undefined) for (const v of value) headers.push([name, v])
  }
  const method = req.method ?? "GET"
  const hasBody = method !== "GET" && method !== "HEAD"
  // The target is always taken as a path on this server (an absolute-form target names no other
  // origin). The Request parses the URL once, and throws on one that is none.
  const target = req.url ?? "/"
  return new Request(`${origin}${target.startsWith("/") ? "" : "/"}${target}`, {
    method,
    headers,
    body: hasBody ? (body ?? (Readable.toWeb(req) as ReadableStream<Uint8Array>)) : undefined,
    // Required by Node's fetch for a streamed request body.
    ...(hasBody ? { duplex: "half" } : {})
  } as RequestInit)
}

/** Resolves once `res` can take more (`drain`) or will take nothing more (`close`). */
const writable = (res: ServerResponse): Promise<void> =>
  new Promise((resolve) => {
    const done = () => {
      res.removeListener("drain", done)
      res.removeListener("close", done)
      resolve()
    }
    res.on("drain", done)
    res.on("close", done)
  })

/**
 * Writes a web `Response` to a Node response, streaming its body no faster than the client reads
 * it (the next chunk is read only once `res` drained); a client gone before the end cancels the
 * body, so its source stops being read, and a body that fails part-way rejects. The chunk that
 * completes a body of the declared `Content-Length` goes with `res.end`: an answer held in memory
 * (one chunk) is written in one call, the headers beside it.
 */
export const writeResponse = async (response: Response, res: ServerResponse): Promise<void> => {
  res.statusCode = response.status
  response.headers.forEach((value, name) => res.appendHeader(name, value))
  if (response.body === null) {
    res.end()
    return
  }
  const declared = Number(response.headers.get("content-length") ?? Number.NaN)
  const reader = response.body.getReader()
  let finished = false
  const cancel = () => {
    if (!finished) reader.cancel().catch(ignore)
  }
  res.once("close", cancel)
  try {
    let sent = 0
    for (;;) {
      const { done, value } = await reader.read()
      if (res.destroyed) throw new Error("the client closed the connection before the answer was sent")
      if (done) {
        finished = true
        res.end()
        return
      }
      sent += value.byteLength
      if (sent === declared) {
        // The whole body: what may follow is past the declared length; its source is let go.
        finished = true
        res.end(value)
        reader.cancel().catch(ignore)
        return
      }
      if (!res.write(value) && !res.destroyed) await writable(res)
    }
  } finally {
    res.removeListener("close", cancel)
  }
}

/** A request body the handler left unread is read to its end, keeping the connection, when it declares at most this many bytes. */
const DRAIN_LIMIT_BYTES = 1024 * 1024

/** How long a larger unread body is still read and thrown away after the answer, so the client can read the answer. */
const LINGER_MS = 5_000

/** An answer held back while lingering is buffered whole when it is at most this large (error answers are small). */
const LINGER_ANSWER_BYTES = 64 * 1024

/** Reads what is left of `req` and throws it away; resolves once it ended, the connection closed, or after `ms`. */
const discardRest = (req: IncomingMessage, ms: number): Promise<void> =>
  new Promise((done) => {
    if (req.readableEnded || req.destroyed) return done()
    const timer = setTimeout(finish, ms)
    function finish() {
      clearTimeout(timer)
      req.removeListener("end", finish)
      req.removeListener("close", finish)
      done()
    }
    req.once("end", finish)
    req.once("close", finish)
    req.on("error", ignore)
    req.resume()
  })

/**
 * Answers a request whose body the handler left unread (a 401, a 413, a refused upload):
 * - the client sent `Expect: 100-continue` and was never told to go on: it sends no body, so the
 *   answer goes at once and the connection closes;
 * - a declared body of at most 1 MiB is read to its end and thrown away, keeping the connection;
 * - anything larger or unannounced: the answer is written whole (not ended), the rest of the body is
 *   read and thrown away for up to `LINGER_MS`, then the connection closes. Closing a socket with
 *   unread bytes resets it, and a reset can destroy an answer the client has not read yet: the
 *   documented 413 would arrive as a broken pipe.
 */
const answerUnreadBody = async (req: IncomingMessage, res: ServerResponse, response: Response, bridge: BodyBridge) => {
  bridge.detach()
  if (continuePending.has(res) && !bridge.pulled()) {
    res.shouldKeepAlive = false
    return writeResponse(response, res)
  }
  const declared = Number(req.headers["content-length"])
  if (Number.isFinite(declared) && declared <= DRAIN_LIMIT_BYTES) {
    req.on("error", ignore)
    req.resume()
    return writeResponse(response, res)
  }
  res.shouldKeepAlive = false
  const answer = response.body === null ? new Uint8Array(0) : await gatherUpTo(response.body, LINGER_ANSWER_BYTES)
  if (answer instanceof ReadableStream) {
    // A large answer streams as usual; the body is thrown away meanwhile.
    void discardRest(req, LINGER_MS)
    return writeResponse(new Response(answer, response), res)
  }
  res.statusCode = response.status
  response.headers.forEach((value, name) => res.appendHeader(name, value))
  res.setHeader("content-length", answer.byteLength)
  res.write(answer)
  await discardRest(req, LINGER_MS)
  res.end()
}

/**
 * `body` whole when it holds at most `limit` bytes; else a stream giving what was read and then the
 * rest, so nothing is lost.
 */
const gatherUpTo = async (body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | ReadableStream<Uint8Array>> => {
  const reader = body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    chunks.push(value)
    size += value.byteLength
    if (size > limit) {
      return new ReadableStream<Uint8Array>({
        pull: async (controller) => {
          const next = chunks.shift()
          if (next !== undefined) return controller.enqueue(next)
          const { done: ended, value: more } = await reader.read()
          if (ended) controller.close()
          else controller.enqueue(more)
        },
        cancel: (reason) => reader.cancel(reason)
      }, { highWaterMark: 0 })
    }
  }
  const whole = new Uint8Array(size)
  let offset = 0
  for (const chunk of chunks) {
    whole.set(chunk, offset)
    offset += chunk.byteLength
  }
  return whole
}

/** Answers 500 when nothing was sent yet, else cuts the connection: a half-sent answer must not look whole. */
const answerFailure = (res: ServerResponse, status = 500, code = "internal_error", message = "Internal server error") => {
  if (res.headersSent) {
    res.destroy()
    return
  }
  res.statusCode = status
  res.setHeader("content-type", "application/json; charset=utf-8")
  res.shouldKeepAlive = false
  res.end(JSON.stringify({ detail: { code, message } }))
}

/**
 * The direct route `req` takes (see `DirectRoute`): its method and path match, and it declares a
 * body of at most the route's bytes; anything else goes to the handler.
 */
const directRouteFor = (routes: ReadonlyArray<DirectRoute>, req: IncomingMessage): DirectRoute | undefined => {
  if (routes.length === 0) return undefined
  const url = req.url ?? ""
  const query = url.indexOf("?")
  const path = query === -1 ? url : url.slice(0, query)
  const route = routes.find((r) => r.path === path && r.method === req.method)
  const declared = req.headers["content-length"]
  return route !== undefined && declared !== undefined && /^\d{1,15}$/.test(declared) && Number(declared) <= route.maxBytes ? route : undefined
}

const headerOf = (req: IncomingMessage) => (name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(", ") : value
}

/** Writes `answer` whole: status, headers and body in one call. */
const writeDirectAnswer = (res: ServerResponse, answer: DirectAnswer) => {
  if (res.destroyed) return
  res.writeHead(answer.status, { ...answer.headers, "content-length": Buffer.byteLength(answer.body) })
  res.end(answer.body)
}

/**
 * Serves `req` by a direct route: the declared body read whole (Node's parser holds the client to
 * its `Content-Length`), then the route's answer; a request that breaks off is not answered.
 */
const serveDirect = (req: IncomingMessage, res: ServerResponse, route: DirectRoute) => {
  if (continuePending.delete(res)) res.writeContinue()
  const chunks: Array<Buffer> = []
  let size = 0
  req.on("data", (chunk: Buffer) => {
    chunks.push(chunk)
    size += chunk.byteLength
  })
  req.once("end", () => {
    const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)
    route.handle(body, headerOf(req)).then((answer) => writeDirectAnswer(res, answer), () => answerFailure(res))
  })
}

/**
 * A Node `request` listener serving `handler`. Whatever happens in a request stays in it: a handler
 * that throws or rejects is answered 500, a request target that is no URL 400, and the request
 * body is read only as the handler pulls it (see `answerUnreadBody` for what is left unread).
 * A request a `direct` route takes never becomes a web `Request` (see `DirectRoute`).
 */
export const toNodeListener = (handler: FetchHandler, origin = "http://localhost", direct: ReadonlyArray<DirectRoute> = []) =>
(req: IncomingMessage, res: ServerResponse): void => {
  res.on("error", ignore)
  req.on("error", ignore)
  const route = directRouteFor(direct, req)
  if (route !== undefined) return serveDirect(req, res, route)
  const method = req.method ?? "GET"
  const bridge = method === "GET" || method === "HEAD" ? undefined : bridgeBody(req, res)
  let request: Request
  try {
    request = toRequest(req, origin, bridge?.stream)
  } catch {
    bridge?.detach()
    answerFailure(res, 400, "bad_request", "Bad request")
    return
  }
  Promise.resolve()
    .then(() => handler(request))
    .then((response) => {
      if (bridge !== undefined && !req.complete) return answerUnreadBody(req, res, response, bridge)
      return writeResponse(response, res)
    })
    .catch(() => answerFailure(res))
}

/**
 * For the server's `checkContinue` event: the `request` listener, with `100 Continue` sent only
 * when the handler first reads the body. Without it Node sends `100 Continue` at once, and a
 * refused body is sent in full before its answer.
 */
export const toCheckContinueListener = (listener: (req: IncomingMessage, res: ServerResponse) => void) =>
(req: IncomingMessage, res: ServerResponse): void => {
  continuePending.add(res)
  listener(req, res)
}
