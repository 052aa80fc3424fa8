import { describe, expect, it } from "vitest"
import { makeAddressPolicy, parseOutboundAllow } from "../../adapters/http/AddressPolicy.ts"

const closed = makeAddressPolicy([])

describe("which addresses outbound requests may reach", () => {
  it.each([
    ["127.0.0.1", "loopback"],
    ["127.255.255.254", "loopback"],
    ["::1", "loopback"],
    ["10.1.2.3", "private"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.168.1.1", "private"],
    ["fc00::1", "unique local"],
    ["fd12:3456::1", "unique local"],
    ["169.254.169.254", "link-local"],
    ["169.254.0.1", "link-local"],
    ["fe80::1", "link-local"],
    ["fe80::1%eth0", "link-local"],
    ["0.0.0.0", "unspecified"],
    ["0.1.2.3", "unspecified"],
    ["::", "unspecified"],
    ["100.64.0.1", "CGNAT"],
    ["100.127.255.255", "CGNAT"],
    ["224.0.0.1", "multicast"],
    ["239.255.255.250", "multicast"],
    ["ff02::1", "multicast"],
    ["255.255.255.255", "broadcast"],
    ["240.0.0.1", "reserved"],
    ["192.0.0.8", "IETF"],
    ["192.0.2.10", "documentation"],
    ["198.51.100.7", "documentation"],
    ["203.0.113.9", "documentation"],
    ["2001:db8::1", "documentation"],
    ["3fff::1", "documentation"],
    ["198.18.0.1", "benchmarking"],
    ["198.19.255.255", "benchmarking"],
    ["::ffff:127.0.0.1", "IPv4-mapped loopback (127.0.0.1)"],
    ["::ffff:7f00:1", "IPv4-mapped loopback"],
    ["::ffff:169.254.169.254", "IPv4-mapped link-local"],
    ["::ffff:10.0.0.1", "IPv4-mapped private"],
    ["64:ff9b::10.0.0.1", "NAT64 private (10.0.0.1)"],
    ["64:ff9b:1::1", "local-use NAT64"],
    ["2002:c0a8:0101::1", "6to4 private (192.168.1.1)"],
    ["2002:7f00:0001::", "6to4 loopback"],
    ["2001::1", "Teredo"],
    ["::127.0.0.1", "not global unicast"],
    ["fec0::1", "site-local"],
    ["100::1", "not global unicast"],
    ["localhost", "not an IP address"]
  ])("refuses %s (%s)", (address, why) => {
    expect(closed.refusal(address)?.why).toContain(why)
  })

  // URL.hostname and DNS hand the policy canonical spellings only; any other is no address at all,
  // so it is refused even where a lenient parser would read a public one.
  it.each([
    "127.1",
    "0x7f.1",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "2130706433",
    "010.0.0.1",
    "1.2.3.04",
    "0x8.0x8.0x8.0x8",
    "::ffff:0x7f.0.0.1",
    "::ffff:010.0.0.1",
    "1.2.3.4%eth0",
    "[::1]"
  ])("refuses the non-canonical spelling %s as not an IP address", (address) => {
    expect(closed.refusal(address)?.why).toBe("not an IP address")
  })

  it.each([
    ["::8.8.8.8", "not global unicast"],
    ["::7f00:1", "not global unicast"],
    ["::0.0.0.1", "loopback"],
    ["::ffff:0:127.0.0.1", "not global unicast"]
  ])("reads the IPv4-compatible %s as the IPv6 address it is (%s), not as IPv4-mapped", (address, why) => {
    expect(closed.refusal(address)?.why).toBe(why)
  })

  it.each([
    "8.8.8.8",
    "1.1.1.1",
    "93.184.215.14",
    "11.0.0.1",
    "172.32.0.1",
    "172.15.255.255",
    "100.128.0.1",
    "100.63.255.255",
    "192.169.0.1",
    "198.20.0.1",
    "223.255.255.255",
    "2606:4700:4700::1111",
    "2001:4860:4860::8888",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
    "2002:0808:0808::1"
  ])("lets public %s through", (address) => {
    expect(closed.refusal(address)).toBeUndefined()
  })

  // The kind is what a tenant is told: which kind of address, never which address.
  it.each([
    ["127.0.0.1", "a loopback address"],
    ["::1", "a loopback address"],
    ["10.1.2.3", "a private address"],
    ["169.254.169.254", "a link-local address"],
    ["fe80::1", "a link-local address"],
    ["fd12:3456::1", "a unique local (private) address"],
    ["0.0.0.0", "an unspecified address"],
    ["100.64.0.1", "a shared (CGNAT) address"],
    ["::ffff:127.0.0.1", "a loopback address"],
    ["64:ff9b::10.0.0.1", "a private address"],
    ["2002:c0a8:0101::1", "a private address"],
    ["::127.0.0.1", "an address outside global unicast"],
    ["0177.0.0.1", "no valid address"]
  ])("names %s to a tenant as %s, without the address", (address, kind) => {
    expect(closed.refusal(address)?.kind).toBe(kind)
  })
})

describe("OMNI_OUTBOUND_ALLOW", () => {
  it("allows exactly the addresses of an IPv4 CIDR", () => {
    const policy = makeAddressPolicy(["127.0.0.1/32"])
    expect(policy.refusal("127.0.0.1")).toBeUndefined()
    expect(policy.refusal("::ffff:127.0.0.1")).toBeUndefined()
    expect(policy.refusal("127.0.0.2")?.why).toBe("loopback")
    expect(policy.refusal("::1")?.why).toBe("loopback")
  })

  it("allows a whole private network", () => {
    const policy = makeAddressPolicy(["10.0.0.0/8"])
    expect(policy.refusal("10.0.0.1")).toBeUndefined()
    expect(policy.refusal("10.255.255.255")).toBeUndefined()
    expect(policy.refusal("172.16.0.1")?.why).toBe("private")
  })

  it("allows IPv6 CIDRs", () => {
    const policy = makeAddressPolicy(["::1/128", "fd00::/8"])
    expect(policy.refusal("::1")).toBeUndefined()
    expect(policy.refusal("fd00::2")).toBeUndefined()
    expect(policy.refusal("fc00::1")?.why).toContain("unique local")
    expect(policy.refusal("127.0.0.1")?.why).toBe("loopback")
  })

  it("takes a bare address as that one address", () => {
    const policy = makeAddressPolicy(["169.254.169.254"])
    expect(policy.refusal("169.254.169.254")).toBeUndefined()
    expect(policy.refusal("169.254.169.253")?.why).toContain("link-local")
  })

  it("allows a host:port pair as written, and no address", () => {
    const policy = makeAddressPolicy(["localhost:8443", "127.0.0.1:9000", "[::1]:9001", "Receiver.Test:80"])
    expect(policy.allowsHostPort("localhost", 8443)).toBe(true)
    expect(policy.allowsHostPort("localhost", 8444)).toBe(false)
    expect(policy.allowsHostPort("127.0.0.1", 9000)).toBe(true)
    expect(policy.allowsHostPort("[::1]", 9001)).toBe(true)
    expect(policy.allowsHostPort("receiver.test", 80)).toBe(true)
    expect(policy.refusal("127.0.0.1")?.why).toBe("loopback")
  })

  it("parses a comma-separated list, ignoring blanks", () => {
    expect(parseOutboundAllow(undefined)).toEqual([])
    expect(parseOutboundAllow("")).toEqual([])
    expect(parseOutboundAllow(" 10.0.0.0/8 , localhost:8443,, ::1/128 ,")).toEqual(["10.0.0.0/8", "localhost:8443", "::1/128"])
  })

  it.each([
    ["10.0.0.1/8", /did you mean 10\.0\.0\.0\/8/],
    ["fd00::1/8", /did you mean fd00:0:0:0:0:0:0:0\/8/],
    ["10.0.0.0/33", /prefix length must be 0 to 32/],
    ["::/129", /prefix length must be 0 to 128/],
    ["10.0.0.0/", /prefix length/],
    ["10.0.0.0/8/9", /expected a CIDR/],
    ["300.1.1.0/24", /not an IP address/],
    ["010.0.0.0/8", /not an IP address/],
    ["127.1/32", /not an IP address/],
    ["0x7f.0.0.1/32", /not an IP address/],
    ["2130706433/32", /not an IP address/],
    ["127.1", /expected a CIDR/],
    ["::ffff:0x7f.0.0.1/128", /not an IP address/],
    ["localhost", /expected a CIDR .* or host:port/],
    ["localhost:0", /port must be 1 to 65535/],
    ["localhost:65536", /port must be 1 to 65535/],
    ["localhost:https", /port must be 1 to 65535/],
    [":8443", /expected a CIDR/],
    ["http://example.com:80", /expected a CIDR/],
    ["user@example.com:80", /not a host name/],
    ["bad host:80", /not a host name/]
  ])("rejects %s with an error naming it", (entry, message) => {
    const attempt = () => parseOutboundAllow(`10.0.0.0/8,${entry}`)
    expect(attempt).toThrow(`OMNI_OUTBOUND_ALLOW entry "${entry}"`)
    expect(attempt).toThrow(message)
    expect(() => makeAddressPolicy([entry])).toThrow(message)
  })
})
