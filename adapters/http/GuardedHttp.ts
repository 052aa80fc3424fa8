import { lookup as dnsLookup } from "node:dns/promises"
import { isIP, type LookupFunction } from "node:net"
import { performance } from "node:perf_hooks"
import * as tls from "node:tls"
import { Effect, Exit, Layer } from "effect"
import { Agent, buildConnector } from "undici"
import {
  OutboundError,
  OutboundHttp,
  outboundHttpOf,
  type OutboundRequest,
  type OutboundResponse,
  type OutboundSend,
  type OutboundStreamed
} from "../../src/ports/OutboundHttp.ts"
import { type AddressPolicy, makeAddressPolicy, type Refusal } from "./AddressPolicy.ts"
import {
  AddressRefused,
  BufferedExchange,
  MAX_SOCKETS_PER_ORIGIN,
  type Pool,
  refused,
  StreamedExchange,
  type Target
} from "./Exchange.ts"

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

/** Longest a connection may take to open; webhook timeouts are at most 60 s, so theirs always comes first. */
const CONNECT_TIMEOUT_MS = 65_000


const defaultResolve = async (hostname: string): Promise<ReadonlyArray<ResolvedAddress>> =>
  (await dnsLookup(hostname, { all: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }))

/**
 * A `lookup` for Node's sockets that resolves at connect time and refuses the connection unless
 * every address passes `refusal`, so the address checked is the address connected to. The refusal
 * names the kind of address only; the address itself is in its detail, for the host's log, never
 * in the message a tenant sees (which would tell what internal names resolve to).
 */
const guardedLookup = (
  resolve: (hostname: string) => Promise<ReadonlyArray<ResolvedAddress>>,
  refusal: (address: string) => Refusal | undefined
): LookupFunction =>
(hostname, options, callback) => {
  const found = (addresses: ReadonlyArray<ResolvedAddress>) => {
    const family = options.family === 4 || options.family === "IPv4" ? 4 : options.family === 6 || options.family === "IPv6" ? 6 : 0
    const usable = addresses.filter((entry) => family === 0 || entry.family === family)
    const first = usable[0]
    if (first === undefined) return callback(new AddressRefused(`${hostname} does not resolve`), "")
    for (const { address } of addresses) {
      const refused = refusal(address)
      if (refused !== undefined) {
        return callback(new AddressRefused(`it resolves to ${refused.kind}`, `${hostname} resolves to ${address}, ${refused.why}`), "")
      }
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

const MAX_CACHED_TARGETS = 1000

/** Parses `text` and checks what can be checked before connecting, or says why it is refused. */
const parseTarget = (text: string, policy: AddressPolicy): Target | AddressRefused => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return new AddressRefused("not a valid URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return new AddressRefused(`${url.protocol} URLs are not allowed, only http: and https:`)
  }
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port)
  // `URL.hostname` brackets IPv6 literals; sockets want them bare.
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname
  const literal = isIP(host) !== 0
  // Trap: Node's lookup hook is not called for literal IPs, so they are checked here.
  const refused = literal && !policy.allowsHostPort(url.hostname, port) ? policy.refusal(host) : undefined
  if (refused !== undefined) return new AddressRefused(`it is ${refused.kind}`, `${host} is ${refused.why}`)
  const authorization = url.username === ""
    ? undefined
    : `Basic ${Buffer.from(`${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`).toString("base64")}`
  return { origin: `${url.protocol}//${url.host}`, path: `${url.pathname}${url.search}`, authorization }
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
  const targets = new Map<string, Target | AddressRefused>()
  const targetOf = (text: string): Target | AddressRefused => {
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
    if (target instanceof AddressRefused) {
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
      if (target instanceof AddressRefused) return resume(Exit.fail(refused(target, started)))
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

/**
 * `OutboundHttp` served by the guarded client (a refusal's detail logged, see `outboundHttpOf`); its
 * pooled connections close with the layer.
 */
export const layer = (options: GuardedHttpOptions): Layer.Layer<OutboundHttp> =>
  Layer.effect(
    OutboundHttp,
    Effect.acquireRelease(Effect.sync(() => makeGuardedHttp(options)), (client) => Effect.promise(client.close)).pipe(
      Effect.map(outboundHttpOf)
    )
  )
