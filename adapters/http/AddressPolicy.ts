import ipaddr from "ipaddr.js"
import { isIP } from "node:net"

/** An IPv4 or IPv6 address. */
type Ip = ipaddr.IPv4 | ipaddr.IPv6

/** A CIDR range: an address and a prefix length, as ipaddr.js matches them. */
type Range = readonly [Ip, number]

/**
 * Why an address may not be reached, told twice: `kind` names the kind of address without the
 * address (what a tenant may be told), `why` says it all (for the host's log).
 */
export interface Refusal {
  /** The kind of address, as a noun phrase: `a loopback address`. */
  readonly kind: string
  /** The whole reason: `loopback`, `IPv4-mapped private (10.0.0.1)`. */
  readonly why: string
}

/** Which addresses outbound requests may reach, and which `host:port` pairs are allowed as written. */
export interface AddressPolicy {
  /** Why `address` (an IP literal) may not be reached, or undefined when it may. */
  readonly refusal: (address: string) => Refusal | undefined
  /** Whether an allow entry `host:port` names this URL host (as `URL.hostname` spells it) and port. */
  readonly allowsHostPort: (hostname: string, port: number) => boolean
}

const bits = (ip: Ip) => (ip.kind() === "ipv4" ? 32 : 128)

const contains = ([base, prefix]: Range, ip: Ip): boolean => ip.kind() === base.kind() && ip.match(base, prefix)

const parseV6 = (text: string): ipaddr.IPv6 => {
  const ip = ipaddr.IPv6.parse(text)
  // Trap: ipaddr.js reads the deprecated IPv4-compatible `::a.b.c.d` as IPv4-mapped `::ffff:a.b.c.d`;
  // it is the IPv6 address ::a.b.c.d (RFC 4291 2.5.5.1), which no IPv4 host answers for.
  return /^::[\d.]+$/.test(text) ? new ipaddr.IPv6([0, 0, 0, 0, 0, 0, ip.parts[6]!, ip.parts[7]!]) : ip
}

/**
 * Parses an IPv4 or IPv6 literal (an IPv6 one without brackets, a zone id ignored). Only what Node's
 * `isIP` accepts is an address: ipaddr.js alone also reads `127.1`, `0x7f.1` or octal `010.0.0.1`,
 * spellings that `URL.hostname` and DNS never hand us and that an allow entry must not mean.
 */
const parseIp = (text: string): Ip | undefined => {
  switch (isIP(text)) {
    case 4:
      return ipaddr.IPv4.parse(text)
    case 6:
      return parseV6(text.split("%")[0]!)
    default:
      return undefined
  }
}

const range = (cidr: string): Range => ipaddr.parseCIDR(cidr)

const table = (rows: ReadonlyArray<readonly [string, string, string]>) =>
  rows.map(([cidr, why, kind]) => ({ range: range(cidr), refusal: { why, kind } }))

/** IPv4 ranges that are not public (IANA special-purpose registry); the first match names the reason. */
const V4_NOT_PUBLIC = table([
  ["0.0.0.0/8", "unspecified (this network)", "an unspecified address"],
  ["10.0.0.0/8", "private", "a private address"],
  ["100.64.0.0/10", "shared address space (CGNAT)", "a shared (CGNAT) address"],
  ["127.0.0.0/8", "loopback", "a loopback address"],
  ["169.254.0.0/16", "link-local (cloud metadata lives here)", "a link-local address"],
  ["172.16.0.0/12", "private", "a private address"],
  ["192.0.0.0/24", "IETF protocol assignments", "an IETF protocol address"],
  ["192.0.2.0/24", "documentation", "a documentation address"],
  ["192.88.99.0/24", "6to4 relay anycast", "a 6to4 relay address"],
  ["192.168.0.0/16", "private", "a private address"],
  ["198.18.0.0/15", "benchmarking", "a benchmarking address"],
  ["198.51.100.0/24", "documentation", "a documentation address"],
  ["203.0.113.0/24", "documentation", "a documentation address"],
  ["224.0.0.0/4", "multicast", "a multicast address"],
  ["255.255.255.255/32", "broadcast", "a broadcast address"],
  ["240.0.0.0/4", "reserved", "a reserved address"]
])

/** IPv6 ranges that carry an IPv4 address in their low bits; the embedded address decides. */
const V6_EMBEDDING_V4 = [
  { range: range("::ffff:0:0/96"), name: "IPv4-mapped", word: 6 },
  { range: range("64:ff9b::/96"), name: "NAT64", word: 6 },
  { range: range("2002::/16"), name: "6to4", word: 1 }
]

/** The IPv4 address held in the two 16-bit words of `ip` from `word` on. */
const embeddedV4 = (ip: ipaddr.IPv6, word: number): ipaddr.IPv4 => {
  const [high = 0, low = 0] = ip.parts.slice(word, word + 2)
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])
}

/** IPv6 ranges that are not public; anything outside global unicast 2000::/3 is refused too. */
const V6_NOT_PUBLIC = table([
  ["::/128", "unspecified", "an unspecified address"],
  ["::1/128", "loopback", "a loopback address"],
  ["64:ff9b:1::/48", "local-use NAT64", "a local-use NAT64 address"],
  ["2001::/32", "Teredo", "a Teredo address"],
  ["2001::/23", "IETF protocol assignments", "an IETF protocol address"],
  ["2001:db8::/32", "documentation", "a documentation address"],
  ["3fff::/20", "documentation", "a documentation address"],
  ["fc00::/7", "unique local (private)", "a unique local (private) address"],
  ["fe80::/10", "link-local", "a link-local address"],
  ["fec0::/10", "site-local", "a site-local address"],
  ["ff00::/8", "multicast", "a multicast address"]
])

const GLOBAL_UNICAST = range("2000::/3")

const NOT_GLOBAL_UNICAST: Refusal = { why: "not global unicast", kind: "an address outside global unicast" }

/** Why `ip` is not a public address, or undefined when it is. */
const notPublic = (ip: Ip): Refusal | undefined => {
  if (ip instanceof ipaddr.IPv4) return V4_NOT_PUBLIC.find((row) => contains(row.range, ip))?.refusal
  for (const embedding of V6_EMBEDDING_V4) {
    if (!contains(embedding.range, ip)) continue
    const v4 = embeddedV4(ip, embedding.word)
    const refusal = notPublic(v4)
    // The embedded address is named only in `why`: it is what the name resolved to.
    return refusal === undefined ? undefined : { why: `${embedding.name} ${refusal.why} (${v4})`, kind: refusal.kind }
  }
  return V6_NOT_PUBLIC.find((row) => contains(row.range, ip))?.refusal
    ?? (contains(GLOBAL_UNICAST, ip) ? undefined : NOT_GLOBAL_UNICAST)
}

const NOT_AN_ADDRESS: Refusal = { why: "not an IP address", kind: "no valid address" }

/** An IPv4-mapped IPv6 address is the IPv4 host itself, so IPv4 allow entries cover it. */
const unmapped = (ip: Ip): Ip => (ip instanceof ipaddr.IPv6 && ip.isIPv4MappedAddress() ? ip.toIPv4Address() : ip)

type AllowEntry =
  | { readonly _tag: "Range"; readonly range: Range }
  | { readonly _tag: "HostPort"; readonly hostname: string; readonly port: number }

const EXAMPLES = "expected a CIDR such as 10.0.0.0/8 or fd00::/8, or host:port such as localhost:8443"

const parseCidr = (entry: string): Range => {
  const [address = "", prefixText = "", ...rest] = entry.split("/")
  const ip = parseIp(address)
  if (rest.length > 0) throw new Error(EXAMPLES)
  if (ip === undefined) throw new Error(`"${address}" is not an IP address; ${EXAMPLES}`)
  const max = bits(ip)
  const prefix = Number(prefixText)
  if (!/^\d{1,3}$/.test(prefixText) || prefix > max) {
    throw new Error(`the prefix length must be 0 to ${max} for IPv${max === 32 ? 4 : 6}`)
  }
  const cidr = `${ip}/${prefix}`
  const network = ip instanceof ipaddr.IPv4 ? ipaddr.IPv4.networkAddressFromCIDR(cidr) : ipaddr.IPv6.networkAddressFromCIDR(cidr)
  if (network.toNormalizedString() !== ip.toNormalizedString()) {
    throw new Error(`bits are set after the /${prefix} prefix (did you mean ${network.toNormalizedString()}/${prefix}?)`)
  }
  return [ip, prefix]
}

const parseHostPort = (entry: string): AllowEntry => {
  const colon = entry.lastIndexOf(":")
  const host = entry.slice(0, colon)
  const portText = entry.slice(colon + 1)
  const port = Number(portText)
  if (colon <= 0) throw new Error(EXAMPLES)
  if (!/^\d{1,5}$/.test(portText) || port < 1 || port > 65535) {
    throw new Error(`the port must be 1 to 65535; ${EXAMPLES}`)
  }
  if (/[/?#@\\\s]/.test(host)) throw new Error(`"${host}" is not a host name; ${EXAMPLES}`)
  let hostname: string
  try {
    // Spelled as `URL.hostname` spells it, so `LocalHost` or `[::FFFF:127.0.0.1]` match their URLs.
    hostname = new URL(`http://${host}/`).hostname
  } catch {
    throw new Error(`"${host}" is not a host name; ${EXAMPLES}`)
  }
  return { _tag: "HostPort", hostname, port }
}

const parseEntry = (entry: string): AllowEntry => {
  try {
    if (entry.includes("/")) return { _tag: "Range", range: parseCidr(entry) }
    // A bare address allows that one address.
    const ip = parseIp(entry)
    if (ip !== undefined) return { _tag: "Range", range: [ip, bits(ip)] }
    return parseHostPort(entry)
  } catch (error) {
    throw new Error(`OMNI_OUTBOUND_ALLOW entry "${entry}": ${(error as Error).message}`)
  }
}

/**
 * Parses `OMNI_OUTBOUND_ALLOW`: comma-separated CIDRs (`10.0.0.0/8`, `::1/128`), single addresses,
 * or `host:port` pairs (`localhost:8443`, `[::1]:9000`). Throws an Error naming a bad entry.
 */
export const parseOutboundAllow = (env: string | undefined): ReadonlyArray<string> => {
  const entries = (env ?? "").split(",").map((entry) => entry.trim()).filter((entry) => entry !== "")
  entries.forEach(parseEntry)
  return entries
}

/** The policy for the given allow entries (as `parseOutboundAllow` returns them); throws on a bad entry. */
export const makeAddressPolicy = (allow: ReadonlyArray<string>): AddressPolicy => {
  const entries = allow.map(parseEntry)
  const ranges = entries.flatMap((entry) => (entry._tag === "Range" ? [entry.range] : []))
  const hostPorts = new Set(entries.flatMap((entry) => (entry._tag === "HostPort" ? [`${entry.hostname}:${entry.port}`] : [])))
  return {
    refusal: (address) => {
      const ip = parseIp(address)
      if (ip === undefined) return NOT_AN_ADDRESS
      const refusal = notPublic(ip)
      if (refusal === undefined) return undefined
      const candidates = [ip, unmapped(ip)]
      return ranges.some((allowed) => candidates.some((candidate) => contains(allowed, candidate))) ? undefined : refusal
    },
    allowsHostPort: (hostname, port) => hostPorts.has(`${hostname}:${port}`)
  }
}
