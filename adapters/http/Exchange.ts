import type { IncomingHttpHeaders } from "node:http"
import { performance } from "node:perf_hooks"
import { Exit } from "effect"
import type { Dispatcher } from "undici"
import {
  OutboundError,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundStreamed
} from "../../src/ports/OutboundHttp.ts"

// One request of the guarded client through its pool (see GuardedHttp.ts): the undici handler that
// times it, caps its answer, retries a dropped kept-alive connection and ends it once, and its two
// kinds, the buffered answer of `send` and the streamed one of `stream`.

/** Connections kept per origin: enough for thousands of webhook deliveries a second to one receiver. */
export const MAX_SOCKETS_PER_ORIGIN = 64

export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
/** Headers the client writes itself from the URL and body; a caller's copy would contradict them. */
const MANAGED_HEADERS = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "expect"
])

/**
 * A URL refused before or at connect time; reported as `UrlNotAllowed`, not as a connection error.
 * Its message may be shown to a tenant; `detail` adds the resolved address for the host's log.
 */
export class AddressRefused extends Error {
  readonly detail: string | undefined
  constructor(message: string, detail?: string) {
    super(message)
    this.detail = detail
  }
}

/**
 * A useful message for a Node network error; happy-eyeballs failures come as an AggregateError with
 * an empty message. With `withAddresses` false, a socket error says what failed (`connect
 * ECONNREFUSED`) without the address it was connecting to: that is what the URL's host resolved to.
 */
export const describeError = (error: unknown, withAddresses = true): string => {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map((each) => describeError(each, withAddresses)).join("; ")
  }
  if (error instanceof Error) {
    const { code, syscall, address } = error as NodeJS.ErrnoException & { address?: unknown }
    if (!withAddresses && typeof address === "string" && syscall !== undefined && code !== undefined) return `${syscall} ${code}`
    return code !== undefined && !error.message.includes(code) ? `${error.message} (${code})` : error.message
  }
  return String(error)
}

export const flattenHeaders = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): Record<string, string> => {
  const result: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) result[name] = typeof value === "string" ? value : value.join(", ")
  }
  return result
}

/** A URL the client may connect to, taken apart. */
export interface Target {
  /** `scheme://host[:port]`, without credentials. */
  readonly origin: string
  /** Path and query. */
  readonly path: string
  /** `Basic …` for credentials written in the URL. */
  readonly authorization: string | undefined
}

/** Errors that mean the server closed or reset the connection under the request. */
const DROPPED_CONNECTION = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"])

/**
 * Bytes a streamed body keeps queued for its reader before the connection is paused: a few socket
 * reads, so a slow reader holds at most about this much (plus what the kernel buffers).
 */
const STREAM_HIGH_WATER_MARK = 256 * 1024

/** The guarded client's connection pool and how many connections it has opened so far. */
export interface Pool {
  readonly dispatcher: Dispatcher
  opened: number
}

/** The headers sent for `outbound`: the caller's, less those the client writes itself, plus the URL's credentials. */
export const requestHeaders = (outbound: OutboundRequest, authorization: string | undefined): Record<string, string> => {
  const headers: Record<string, string> = {}
  let hasAuthorization = false
  for (const name of Object.keys(outbound.headers)) {
    const lower = name.toLowerCase()
    if (MANAGED_HEADERS.has(lower)) continue
    if (lower === "authorization") hasAuthorization = true
    headers[name] = outbound.headers[name]!
  }
  // Credentials written in the URL, unless the request brings its own, as Node's client does.
  if (authorization !== undefined && !hasAuthorization) headers.authorization = authorization
  return headers
}

export const elapsedSince = (started: number) => Math.round(performance.now() - started)

export const refused = (refusal: AddressRefused, started: number) =>
  new OutboundError({ reason: "UrlNotAllowed", message: refusal.message, detail: refusal.detail, timeMs: elapsedSince(started) })

/** The whole-exchange timer's callback; one function for every exchange, so no closure per request. */
const expire = (exchange: Exchange) => exchange.expire()

/**
 * One request through the pool, whatever is done with its answer. What `send` and `stream` share:
 * the whole-exchange timer, the size limit (declared and counted), a dropped kept-alive connection
 * sent again while no response has begun, errors told apart, and ending it all exactly once. It is
 * undici's handler itself, the same object for every attempt. A subclass says what becomes of the
 * answer: `BufferedExchange` keeps the body whole, `StreamedExchange` hands it on as it arrives.
 */
abstract class Exchange implements Dispatcher.DispatchHandler {
  protected readonly origin: string
  protected readonly maxBytes: number
  protected readonly started: number
  /** Ended: answered, failed, abandoned or cancelled; undici's later callbacks are ignored. */
  protected done = false
  protected controller: Dispatcher.DispatchController | undefined = undefined
  private readonly pool: Pool
  private readonly options: Dispatcher.DispatchOptions
  private readonly timeoutMs: number
  private readonly timer: ReturnType<typeof setTimeout>
  /** Bytes of body received so far. */
  protected size = 0
  private retriesLeft = MAX_SOCKETS_PER_ORIGIN
  private openedBefore = 0
  private reusedConnection = false
  private responded = false

  constructor(pool: Pool, outbound: OutboundRequest, target: Target, started: number) {
    this.pool = pool
    this.origin = target.origin
    this.started = started
    this.maxBytes = outbound.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
    this.timeoutMs = outbound.timeoutMs
    this.options = {
      origin: target.origin,
      path: target.path,
      method: outbound.method,
      headers: requestHeaders(outbound, target.authorization),
      body: outbound.body ?? null
    }
    // Real time on purpose: network timeouts never follow the (possibly manual) Effect clock.
    this.timer = setTimeout(expire, outbound.timeoutMs, this)
  }

  /** Status and headers are in, the declared size within the limit. */
  protected abstract head(status: number, headers: Record<string, string>): void
  /** A piece of the body, the total still within the limit. */
  protected abstract chunk(chunk: Buffer): void
  /** The body is complete; the exchange has ended. */
  protected abstract end(): void
  /** The exchange failed, before the head was given on or after; it has ended. */
  protected abstract failed(error: OutboundError): void

  /** Sends the request, again when a kept-alive connection turns out dropped. */
  attempt(): void {
    this.openedBefore = this.pool.opened
    // Known once undici hands it a connection; an error before that (connecting) is on a new one.
    this.reusedConnection = false
    try {
      this.pool.dispatcher.dispatch(this.options, this)
    } catch (error) {
      // Undici refuses some header names and values synchronously.
      this.fail("Connection", `could not send to ${this.origin}: ${describeError(error)}`)
    }
  }

  /** Ends the exchange without an answer (interrupted, or the body cancelled) and aborts the request. */
  abandon(why: string): void {
    if (!this.finish()) return
    this.controller?.abort(new Error(why))
  }

  expire(): void {
    this.fail("Timeout", `${this.origin} gave no complete answer within ${this.timeoutMs} ms`)
  }

  /** Marks the exchange ended and stops its timer; false when it had already ended. */
  private finish(): boolean {
    if (this.done) return false
    this.done = true
    clearTimeout(this.timer)
    return true
  }

  private fail(reason: OutboundError["reason"], message: string, detail?: string): void {
    if (!this.finish()) return
    // Undici hands the request to a connection (`onRequestStart`) just before writing it.
    const sent = this.controller !== undefined && reason !== "UrlNotAllowed" ? { sent: true } : {}
    this.failed(new OutboundError({ reason, message, detail, timeMs: elapsedSince(this.started), ...sent }))
    this.controller?.abort(new Error(message))
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller
    this.reusedConnection = this.pool.opened === this.openedBefore
    // Ended while it waited for a connection (timed out or interrupted): it is never sent.
    if (this.done) controller.abort(new Error("the request was abandoned before it was sent"))
  }

  onResponseStart(_controller: Dispatcher.DispatchController, status: number, rawHeaders: IncomingHttpHeaders): void {
    if (this.done) return
    this.responded = true
    const headers = flattenHeaders(rawHeaders)
    const declared = Number(headers["content-length"])
    if (declared > this.maxBytes) return this.fail("TooLarge", `${this.origin} answered ${declared} bytes, more than ${this.maxBytes}`)
    this.head(status, headers)
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.done) return
    this.size += chunk.length
    if (this.size > this.maxBytes) return this.fail("TooLarge", `${this.origin} answered more than ${this.maxBytes} bytes`)
    this.chunk(chunk)
  }

  onResponseEnd(): void {
    if (this.finish()) this.end()
  }

  onResponseError(_controller: Dispatcher.DispatchController, error: NodeJS.ErrnoException): void {
    if (this.done) return
    if (error instanceof AddressRefused) return this.fail("UrlNotAllowed", error.message, error.detail)
    // A kept-alive connection the server closed while idle fails at once: sent again, as Node's
    // own client advises. A dropped connection is gone, so each retry meets another one, and
    // they end with the first failure on a connection opened for the request.
    const dropped = error.code !== undefined && DROPPED_CONNECTION.has(error.code)
    if (this.retriesLeft > 0 && this.reusedConnection && !this.responded && dropped) {
      this.retriesLeft -= 1
      return this.attempt()
    }
    if (this.responded && error.code === "UND_ERR_SOCKET") {
      return this.fail("Connection", `${this.origin} closed the connection before the response ended`)
    }
    const told = `${this.origin}: ${describeError(error, false)}`
    const whole = `${this.origin}: ${describeError(error)}`
    this.fail("Connection", told, whole === told ? undefined : whole)
  }
}

/** `send`'s exchange: the body kept whole, the answer given once it is complete. */
export class BufferedExchange extends Exchange {
  private readonly resume: (result: Exit.Exit<OutboundResponse, OutboundError>) => void
  private status = 0
  private headers: Record<string, string> = {}
  private readonly chunks: Array<Buffer> = []

  constructor(
    pool: Pool,
    outbound: OutboundRequest,
    target: Target,
    started: number,
    resume: (result: Exit.Exit<OutboundResponse, OutboundError>) => void
  ) {
    super(pool, outbound, target, started)
    this.resume = resume
  }

  protected head(status: number, headers: Record<string, string>): void {
    this.status = status
    this.headers = headers
  }

  protected chunk(chunk: Buffer): void {
    this.chunks.push(chunk)
  }

  protected end(): void {
    const body = new Uint8Array(this.size)
    let offset = 0
    for (const chunk of this.chunks) {
      body.set(chunk, offset)
      offset += chunk.length
    }
    this.resume(Exit.succeed({ status: this.status, headers: this.headers, body, timeMs: elapsedSince(this.started) }))
  }

  protected failed(error: OutboundError): void {
    this.resume(Exit.fail(error))
  }
}

/**
 * `stream`'s exchange: the answer given at the head, the body a web stream fed as pieces arrive.
 * The connection is paused while the stream's queue is full and resumed when its reader pulls, so
 * the body is never held whole; cancelling the stream aborts the request.
 */
export class StreamedExchange extends Exchange {
  private readonly resume: (result: Exit.Exit<OutboundStreamed, OutboundError>) => void
  private body: ReadableStreamDefaultController<Uint8Array> | undefined = undefined

  constructor(
    pool: Pool,
    outbound: OutboundRequest,
    target: Target,
    started: number,
    resume: (result: Exit.Exit<OutboundStreamed, OutboundError>) => void
  ) {
    super(pool, outbound, target, started)
    this.resume = resume
  }

  protected head(status: number, headers: Record<string, string>): void {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.body = controller
      },
      // Undici's resume is a no-op unless paused.
      pull: () => this.controller?.resume(),
      cancel: () => this.abandon("the body was cancelled")
    }, new ByteLengthQueuingStrategy({ highWaterMark: STREAM_HIGH_WATER_MARK }))
    this.resume(Exit.succeed({ status, headers, body }))
  }

  protected chunk(chunk: Buffer): void {
    const body = this.body!
    // A plain view of undici's piece (a slice of one socket read, never reused): no copy.
    body.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
    // Undici stops reading the socket once this piece is handled, until `pull` resumes it.
    if (body.desiredSize !== null && body.desiredSize <= 0) this.controller?.pause()
  }

  protected end(): void {
    this.body?.close()
  }

  protected failed(error: OutboundError): void {
    if (this.body === undefined) this.resume(Exit.fail(error))
    else this.body.error(error)
  }
}

