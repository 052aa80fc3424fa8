import { Effect } from "effect"

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

const fromHex = (hex: string): Uint8Array<ArrayBuffer> => {
  const bytes = new Uint8Array(new ArrayBuffer(hex.length / 2))
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return bytes
}

/**
 * Whether `header` (`X-Hub-Signature-256: sha256=<hex>`) is the HMAC-SHA256 of `body`, the raw bytes
 * as received, under the app secret. WebCrypto's `verify` compares in constant time; a missing or
 * malformed header is simply not valid.
 */
export const verifyHubSignature = (
  secret: string,
  header: string | null,
  body: Uint8Array<ArrayBuffer>
): Effect.Effect<boolean> => {
  if (header === null || !header.startsWith("sha256=")) return Effect.succeed(false)
  const hex = header.slice("sha256=".length).trim()
  if (!HEX.test(hex)) return Effect.succeed(false)
  return Effect.promise(async () =>
    globalThis.crypto.subtle.verify("HMAC", await keyFor(secret), fromHex(hex), body)
  )
}

/** `sha256=<hex>` for `body` under `secret`: what the operator sends (tests and the benchmark sign with it). */
export const hubSignature = (secret: string, body: Uint8Array<ArrayBuffer>): Effect.Effect<string> =>
  Effect.promise(async () => {
    const mac = new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", await keyFor(secret), body))
    return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, "0")).join("")}`
  })
