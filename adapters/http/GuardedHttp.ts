import { lookup as dnsLookup } from "node:dns/promises"
import type { IncomingHttpHeaders } from "node:http"
import { isIP, type LookupFunction } from "node:net"
import { performance } from "node:perf_hooks"
import * as tls from "node:tls"
import { Effect, Exit, Layer } from "effect"
import { Agent, buildConnector, type Dispatcher } from "undici"
import {
  OutboundError,
  OutboundHttp,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundSend,
  type OutboundStreamed
} from "../../src/ports/OutboundHttp.ts"
import { type AddressPolicy, makeAddressPolicy } from "./AddressPolicy.ts"

export { parseOutboundAllow } from "./AddressPolicy.ts"

/** One address a host name resolves to. */
export interface ResolvedAddress {
  readonly address: string
  readonly family: 4 | 6
}

/** How the guarded client is set up. */
export interface GuardedHttpOptions {
  /** Entries of `OMNI_OUTBOUND_ALLOW` (see `parseOutboundAllow`): private addresses or `host:port` pairs that may be reached. */
  readonly allow: ReadonlyArray<string>
  /**
   * Extra trusted CA certificates (PEM), added to Node's own as `NODE_EXTRA_CA_CERTS` would be; for
   * tests and embedding hosts (the reference host relies on `NODE_EXTRA_CA_CERTS`).
   */
  readonly ca?: string | ReadonlyArray<string>
  /** Resolves a host name at connect time; `dns.lookup` (all addresses) by default. Tests simulate DNS with it. */
  readonly resolve?: (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>
}

/** The guarded client, plus `close` to drop its pooled connections (resolves once they are closed). */
export type GuardedHttp = OutboundHttp["Service"] & {
  readonly close: () => Promise<void>
}

const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
/** Connections kept per origin: enough for thousands of webhook deliveries a second to one receiver. */
const MAX_SOCKETS_PER_ORIGIN = 64
/** Longest a connection may take to open; webhook timeouts are at most 60 s, so theirs always comes first. */
const CONNECT_TIMEOUT_MS = 65_000

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

/** A lookup refused the address it found; reported as `UrlNotAllowed`, not as a connection error. */
class AddressRefused extends Error {}

const defaultResolve = async (hostname: string): Promise<ReadonlyArray<ResolvedAddress>> =>
  (await dnsLookup(hostname, { all: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))

/**
 * A `lookup` for Node's sockets that resolves at connect time and refuses the connection unless
 * every address passes `refusal`, so the address checked is the address connected to.
 */
const guardedLookup = (
  resolve: (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>,
  refusal: (address: string) => string | undefined
): LookupFunction =>
(hostname, options, callback) => {
  const found = (addresses: ReadonlyArray<ResolvedAddress>) => {
    const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0
    const usable = addresses.filter((entry) => family === 0 || entry.family === family)
    const first = usable[0]
    if (first === undefined) return callback(new AddressRefused(`${hostname} does not resolve`), "")
    for (const { address } of addresses) {
      const why = refusal(address)
      if (why !== undefined) return callback(new AddressRefused(`${hostname} resolves to ${address}, ${why}`), "")
    }
    if (options.all) callback(null, usable.map(({ address, family }) => ({ address, family })))
    else callback(null, first.address, first.family)
  }
  const failed = (error: NodeJS.ErrnoException) =>
    callback(
      error.code === "ENOTFOUND" || error.code === "ENODATA" ? new AddressRefused(`${hostname} does not resolve`) : error,
      ""
    )
  resolve(hostname).then(found, failed)
}

/** A useful message for a Node network error; happy-eyeballs failures come as an AggregateError with an empty message. */
const describeError = (error: unknown): string => {
  if (error instanceof AggregateError && error.errors.length > 0) return error.errors.map(describeError).join("; ")
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code
    return code !== undefined && !error.message.includes(code) ? `${error.message} (${code})` : error.message
  }
  return String(error)
}

const flattenHeaders = (headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>): Record<string, string> => {
  const result: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) result[name] = typeof value === "string" ? value : value.join(", ")
  }
  return result
}

/** A URL the client may connect to, taken apart. */
interface Target {
  /** `scheme://host[:port]`, without credentials. */
  readonly origin: string
  /** Path and query. */
  readonly path: string
  /** `Basic …` for credentials written in the URL. */
  readonly authorization: string | undefined
}

const MAX_CACHED_TARGETS = 1000

/** Parses `text` and checks what can be checked before connecting; a string says why it is refused. */
const parseTarget = (text: string, policy: AddressPolicy): Target | string => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return "not a valid URL"
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return `${url.protocol} URLs are not allowed, only http: and https:`
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
  // `URL.hostname` brackets IPv6 literals; sockets want them bare.
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  const literal = isIP(host) !== 0
  // Trap: Node's lookup hook is not called for literal IPs, so they are checked here.
  const why = literal && !policy.allowsHostPort(url.hostname, port) ? policy.refusal(host) : undefined
  if (why !== undefined) return `${host} is ${why}`
  const authorization = url.username === ""
    ? undefined
    : `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`
  return { origin: `${url.protocol}//${url.host}`, path: `${url.pathname}${url.search}`, authorization }
}

/** Errors that mean the server closed or reset the connection under the request. */
const DROPPED_CONNECTION = new Set(["UND_ERR_SOCKET", "ECONNRESET", "EPIPE"])

/**
 * Bytes a streamed body keeps queued for its reader before the connection is paused: a few socket
 * reads, so a slow reader holds at most about this much (plus what the kernel buffers).
 */
const STREAM_HIGH_WATER_MARK = 256 * 1024

/** The guarded client's connection pool and how many connections it has opened so far. */
interface Pool {
  readonly dispatcher: Dispatcher
  opened: number
}

/** The headers sent for `outbound`: the caller's, less those the client writes itself, plus the URL's credentials. */
const requestHeaders = (outbound: OutboundRequest, authorization: string | undefined): Record<string, string> => {
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

const elapsedSince = (started: number) => Math.round(performance.now() - started)

const refused = (why: string, started: number) =>
  new OutboundError({ reason: "UrlNotAllowed", message: why, timeMs: elapsedSince(started) })

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

  private fail(reason: OutboundError["reason"], message: string): void {
    if (!this.finish()) return
    this.failed(new OutboundError({ reason, message, timeMs: elapsedSince(this.started) }))
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
    if (error instanceof AddressRefused) return this.fail("UrlNotAllowed", error.message)
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
    this.fail("Connection", `${this.origin}: ${describeError(error)}`)
  }
}

/** `send`'s exchange: the body kept whole, the answer given once it is complete. */
class BufferedExchange extends Exchange {
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
class StreamedExchange extends Exchange {
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

/**
 * The guarded outbound client: http(s) only, every address it connects to public unless allowed,
 * checked at connect time, redirects returned as they are, whole-exchange timeouts in real time.
 * Requests go through undici's connection pools (one per origin, at most 64 keep-alive
 * connections, no pipelining: webhook POSTs are not idempotent), which costs well under half of
 * what `node:https` costs per request. Throws when an allow entry is bad.
 */
export const makeGuardedHttp = (options: GuardedHttpOptions): GuardedHttp => {
  const policy: AddressPolicy = makeAddressPolicy(options.allow)
  const resolve = options.resolve ?? defaultResolve
  const extraCa = options.ca === undefined ? [] : typeof options.ca === "string" ? [options.ca] : options.ca
  const connectorOptions = {
    // Undici's own connect timeout stays out of the way of the whole-exchange timer (at most 60 s for webhooks).
    timeout: CONNECT_TIMEOUT_MS,
    // One context for every connection, rather than parsing the whole CA list per handshake.
    ...(extraCa.length > 0 ? { secureContext: tls.createSecureContext({ ca: [...tls.getCACertificates("default"), ...extraCa] }) } : {})
  }
  const checkedConnector = buildConnector({ ...connectorOptions, lookup: guardedLookup(resolve, policy.refusal) })
  const allowedConnector = buildConnector({ ...connectorOptions, lookup: guardedLookup(resolve, () => undefined) })

  const connect: buildConnector.connector = (connection, callback) => {
    const port = Number(connection.port) || (connection.protocol === "https:" ? 443 : 80)
    // `connection.hostname` has IPv6 literals bare; allow entries name them as `URL.hostname` does.
    const hostname = isIP(connection.hostname) === 6 ? `[${connection.hostname}]` : connection.hostname
    const connector = policy.allowsHostPort(hostname, port) ? allowedConnector : checkedConnector
    pool.opened += 1
    // Undici names the URL's host by SNI, and an IP literal by none (RFC 6066).
    connector(connection, callback)
  }
  // `opened` counts connections opened so far. A request during which none was opened went out on
  // one opened before it: when that kept-alive connection turns out dropped, the request is sent again.
  const pool: Pool = {
    dispatcher: new Agent({
      connections: MAX_SOCKETS_PER_ORIGIN,
      pipelining: 1,
      connect,
      // The whole-exchange timer bounds every request; undici's own timers would only differ from it.
      headersTimeout: 0,
      bodyTimeout: 0
    }),
    opened: 0
  }

  // What a URL comes to: where to connect, or why not. Webhook deliveries post to the same few URLs
  // thousands of times a second, so the parse and the literal-address check are kept per URL.
  const targets = new Map<string, Target | string>()
  const targetOf = (text: string): Target | string => {
    let target = targets.get(text)
    if (target === undefined) {
      target = parseTarget(text, policy)
      if (targets.size >= MAX_CACHED_TARGETS) targets.delete(targets.keys().next().value!)
      targets.set(text, target)
    }
    return target
  }

  const send: OutboundSend = (outbound, resume) => {
    const started = performance.now()
    const target = targetOf(outbound.url)
    if (typeof target === "string") {
      resume(Exit.fail(refused(target, started)))
      return () => {}
    }
    const exchange = new BufferedExchange(pool, outbound, target, started, resume)
    exchange.attempt()
    return () => exchange.abandon("interrupted")
  }

  const request = (outbound: OutboundRequest) =>
    Effect.callback<OutboundResponse, OutboundError>((resume) => {
      const abandon = send(outbound, resume)
      return Effect.sync(abandon)
    })

  const stream = (outbound: OutboundRequest) =>
    Effect.callback<OutboundStreamed, OutboundError>((resume) => {
      const started = performance.now()
      const target = targetOf(outbound.url)
      if (typeof target === "string") return resume(Exit.fail(refused(target, started)))
      const exchange = new StreamedExchange(pool, outbound, target, started, resume)
      exchange.attempt()
      // Only before the head: once the answer is given, the body's reader ends the exchange.
      return Effect.sync(() => exchange.abandon("interrupted"))
    })

  return {
    request,
    send,
    stream,
    close: () => pool.dispatcher.destroy()
  }
}

/** `OutboundHttp` served by the guarded client; its pooled connections close with the layer. */
export const layer = (options: GuardedHttpOptions): Layer.Layer<OutboundHttp> =>
  Layer.effect(
    OutboundHttp,
    Effect.acquireRelease(Effect.sync(() => makeGuardedHttp(options)), (client) => Effect.promise(client.close))
  )
