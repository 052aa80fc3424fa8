import { Effect } from "effect"

/** The three Standard Webhooks headers a delivery carries. */
export interface SignatureHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

const SECRET_PREFIX = "whsec_"

const fromBase64 = (base64: string): Uint8Array<ArrayBuffer> => {
  const binary = atob(base64)
  const bytes = new Uint8Array(new ArrayBuffer(binary.length))
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}
const toBase64 = (bytes: ArrayBuffer): string => btoa(String.fromCharCode(...new Uint8Array(bytes)))

// Importing an HMAC key costs more than signing with it: keep the keys of recently used secrets.
const keys = new Map<string, Promise<CryptoKey>>()
const MAX_CACHED_KEYS = 1000

const keyFor = (secret: string): Promise<CryptoKey> => {
  let key = keys.get(secret)
  if (key === undefined) {
    if (keys.size >= MAX_CACHED_KEYS) keys.delete(keys.keys().next().value!)
    key = globalThis.crypto.subtle.importKey(
      "raw",
      fromBase64(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"]
    )
    keys.set(secret, key)
  }
  return key
}

/**
 * Signs `body` by the Standard Webhooks scheme: `v1,` + base64 HMAC-SHA256, keyed by the
 * secret's base64 bytes, over `{webhook-id}.{webhook-timestamp}.{body}`. The timestamp is the
 * moment of sending in wall-clock seconds, so a delivery replayed hours later still verifies
 * within a receiver's tolerance.
 */
export const sign = (input: {
  readonly secret: string
  readonly messageId: string
  readonly timestampSeconds: number
  readonly body: string
}): Effect.Effect<SignatureHeaders> =>
  Effect.promise(async () => {
    const key = await keyFor(input.secret)
    const timestamp = String(Math.floor(input.timestampSeconds))
    const mac = await globalThis.crypto.subtle.sign(
      "HMAC",
      key,
      new TextEncoder().encode(`${input.messageId}.${timestamp}.${input.body}`)
    )
    return {
      "webhook-id": input.messageId,
      "webhook-timestamp": timestamp,
      "webhook-signature": `v1,${toBase64(mac)}`
    }
  })
