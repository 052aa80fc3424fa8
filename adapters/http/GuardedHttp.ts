import { lookup as dnsLookup } from "node:dns/promises"
import * as http from "node:http"
import * as https from "node:https"
import { isIP, type LookupFunction } from "node:net"
import { performance } from "node:perf_hooks"
import * as tls from "node:tls"
import { Effect, Layer } from "effect"
import {
  OutboundError,
  OutboundHttp,
  type OutboundRequest,
  type OutboundResponse
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

/** The guarded client, plus `close` to drop its pooled connections. */
export type GuardedHttp = OutboundHttp["Service"] & {
  readonly close: () => void
}

const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
/** Connections kept per origin: enough for thousands of webhook deliveries a second to one receiver. */
const MAX_SOCKETS_PER_ORIGIN = 64

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

const flattenHeaders = (headers: http.IncomingHttpHeaders): Record<string, string> => {
  const result: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) result[name] = Array.isArray(value) ? value.join(", ") : value
  }
  return result
}

/** A URL the client may connect to, taken apart. */
interface Target {
  readonly url: URL
  /** The host to connect to: an IPv6 literal without its brackets. */
  readonly host: string
  readonly port: number
  readonly literal: boolean
  /** Whether `OMNI_OUTBOUND_ALLOW` names this host and port, which lifts the address check. */
  readonly hostPortAllowed: boolean
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
  const hostPortAllowed = policy.allowsHostPort(url.hostname, port)
  // Trap: Node's lookup hook is not called for literal IPs, so they are checked here.
  const why = literal && !hostPortAllowed ? policy.refusal(host) : undefined
  if (why !== undefined) return `${host} is ${why}`
  return { url, host, port, literal, hostPortAllowed }
}

/**
 * The guarded outbound client: http(s) only, every address it connects to public unless allowed,
 * checked at connect time, redirects returned as they are, whole-exchange timeouts in real time.
 * Throws when an allow entry is bad.
 */
export const makeGuardedHttp = (options: GuardedHttpOptions): GuardedHttp => {
  const policy: AddressPolicy = makeAddressPolicy(options.allow)
  const resolve = options.resolve ?? defaultResolve
  const checkedLookup = guardedLookup(resolve, policy.refusal)
  const allowedLookup = guardedLookup(resolve, () => undefined)
  const extraCa = options.ca === undefined ? [] : typeof options.ca === "string" ? [options.ca] : options.ca
  const agentOptions = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN }
  const agents = {
    "http:": new http.Agent(agentOptions),
    "https:": new https.Agent({
      ...agentOptions,
      // One context for every connection, rather than parsing the whole CA list per handshake.
      ...(extraCa.length > 0 ? { secureContext: tls.createSecureContext({ ca: [...tls.getCACertificates("default"), ...extraCa] }) } : {})
    })
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

  const request = (outbound: OutboundRequest) =>
    Effect.callback<OutboundResponse, OutboundError>((resume) => {
      const started = performance.now()
      const elapsed = () => Math.round(performance.now() - started)
      const refuse = (message: string) =>
        resume(Effect.fail(new OutboundError({ reason: "UrlNotAllowed", message, timeMs: elapsed() })))

      const target = targetOf(outbound.url)
      if (typeof target === "string") return refuse(target)
      const { url, host, port, literal, hostPortAllowed } = target
      const agent = agents[url.protocol as "http:" | "https:"]

      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(outbound.headers)) {
        if (!MANAGED_HEADERS.has(name.toLowerCase())) headers[name] = value
      }
      if (outbound.body !== undefined || outbound.method === "POST") {
        headers["content-length"] = String(outbound.body === undefined ? 0 : Buffer.byteLength(outbound.body))
      }
      const maxBytes = outbound.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES
      const origin = `${url.protocol}//${url.host}`

      let done = false
      let current: http.ClientRequest | undefined
      const settle = (effect: Effect.Effect<OutboundResponse, OutboundError>) => {
        if (done) return
        done = true
        clearTimeout(timer)
        resume(effect)
      }
      const fail = (reason: OutboundError["reason"], message: string) => {
        settle(Effect.fail(new OutboundError({ reason, message, timeMs: elapsed() })))
        current?.destroy()
      }
      // Real time on purpose: network timeouts never follow the (possibly manual) Effect clock.
      const timer = setTimeout(
        () => fail("Timeout", `${origin} gave no complete answer within ${outbound.timeoutMs} ms`),
        outbound.timeoutMs
      )

      const send = (retryStaleSocket: boolean) => {
        let responded = false
        let req: http.ClientRequest
        try {
          req = (url.protocol === "https:" ? https : http).request({
            agent,
            method: outbound.method,
            host,
            port,
            path: `${url.pathname}${url.search}`,
            headers,
            lookup: hostPortAllowed ? allowedLookup : checkedLookup,
            // SNI names the host of the URL; an IP literal gets none (RFC 6066).
            servername: literal ? "" : host,
            ...(url.username !== "" ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {})
          })
        } catch (error) {
          // Node refuses some header names and values synchronously.
          return fail("Connection", `could not send to ${origin}: ${describeError(error)}`)
        }
        current = req
        req.on("error", (error: NodeJS.ErrnoException) => {
          if (done) return
          if (error instanceof AddressRefused) return fail("UrlNotAllowed", error.message)
          // A kept-alive socket the server closed while idle fails at once: Node's documented remedy is one fresh attempt.
          if (retryStaleSocket && !responded && req.reusedSocket && error.code === "ECONNRESET") return send(false)
          fail("Connection", `${origin}: ${describeError(error)}`)
        })
        req.on("response", (res) => {
          responded = true
          const declared = Number(res.headers["content-length"])
          if (declared > maxBytes) return fail("TooLarge", `${origin} answered ${declared} bytes, more than ${maxBytes}`)
          const chunks: Array<Buffer> = []
          let size = 0
          res.on("data", (chunk: Buffer) => {
            size += chunk.length
            if (size > maxBytes) return fail("TooLarge", `${origin} answered more than ${maxBytes} bytes`)
            chunks.push(chunk)
          })
          res.on("end", () => {
            const body = new Uint8Array(size)
            let offset = 0
            for (const chunk of chunks) {
              body.set(chunk, offset)
              offset += chunk.length
            }
            settle(Effect.succeed({ status: res.statusCode ?? 0, headers: flattenHeaders(res.headers), body, timeMs: elapsed() }))
          })
          res.on("close", () => {
            if (!res.complete) fail("Connection", `${origin} closed the connection before the response ended`)
          })
        })
        req.end(outbound.body)
      }
      send(true)
      return Effect.sync(() => {
        if (done) return
        done = true
        clearTimeout(timer)
        current?.destroy()
      })
    })

  return {
    request,
    close: () => {
      agents["http:"].destroy()
      agents["https:"].destroy()
    }
  }
}

/** `OutboundHttp` served by the guarded client; its pooled connections close with the layer. */
export const layer = (options: GuardedHttpOptions): Layer.Layer<OutboundHttp> =>
  Layer.effect(
    OutboundHttp,
    Effect.acquireRelease(Effect.sync(() => makeGuardedHttp(options)), (client) => Effect.sync(client.close))
  )
