import { Effect } from "effect"
import type { HmacSigner } from "../ports/HmacSigner.ts"

const encoder = new TextEncoder()

// One imported key per secret: importing costs more than the MAC itself.
const keys = new Map<string, Promise<CryptoKey>>()
const keyFor = (secret: string): Promise<CryptoKey> => {
  let key = keys.get(secret)
  if (key === undefined) {
    key = globalThis.crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
      "verify"
    ])
    if (keys.size > 16) keys.clear()
    keys.set(secret, key)
  }
  return key
}

const HEX = /^[0-9a-f]{64}$/i

/** The value of a hex digit's character code (`0`-`9`, `a`-`f`, `A`-`F`; `HEX` checked the text). */
const nibble = (code: number): number => (code <= 57 ? code - 48 : (code | 32) - 87)

const fromHex = (hex: string): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(new ArrayBuffer(hex.length / 2))
  for (let i = 0; i < bytes.length; i++) bytes[i] = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1))
  return bytes
}

/**
 * Whether `header` (`X-Hub-Signature-256: sha256=<hex>`) is the HMAC-SHA256 of `body`, the raw bytes
 * as received, under the app secret, compared in constant time: by `signer`'s `verifyNow` when it has
 * one (on the calling thread, as `nodeHmacSigner` does), else by WebCrypto's `verify`, a job on
 * another thread that costs ten times as much. A missing or malformed header is simply not valid.
 */
export const verifyHubSignature = (
  secret: string,
  header: string | null,
  body: Uint8Array<ArrayBuffer>,
  signer?: HmacSigner["Service"]
): Effect.Effect<boolean> => {
  const mac = macOf(header)
  if (mac === undefined) return Effect.succeed(false)
  const verifyNow = signer?.verifyNow
  if (verifyNow !== undefined) return Effect.sync(() => verifyNow(secret, body, mac))
  return Effect.promise(async () => globalThis.crypto.subtle.verify("HMAC", await keyFor(secret), mac, body))
}

/** `verifyHubSignature` on the calling thread, with a signer's `verifyNow`. */
export const verifyHubSignatureNow = (
  secret: string,
  header: string | null,
  body: Uint8Array,
  verifyNow: NonNullable<HmacSigner["Service"]["verifyNow"]>
): boolean => {
  const mac = macOf(header)
  return mac !== undefined && verifyNow(secret, body, mac)
}

/** The MAC an `X-Hub-Signature-256` header carries; undefined when it is missing or malformed. */
const macOf = (header: string | null): Uint8Array<ArrayBuffer> | undefined => {
  if (header === null || !header.startsWith("sha256=")) return undefined
  const hex = header.slice("sha256=".length).trim()
  return HEX.test(hex) ? fromHex(hex) : undefined
}

/** `sha256=<hex>` for `body` under `secret`: what the operator sends (tests and the benchmark sign with it). */
export const hubSignature = (secret: string, body: Uint8Array<ArrayBuffer>): Effect.Effect<string> =>
  Effect.promise(async () => {
    const mac = new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", await keyFor(secret), body))
    return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("")}`
  })
