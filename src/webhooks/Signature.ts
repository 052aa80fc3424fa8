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
    const key = await globalThis.crypto.subtle.importKey(
      "raw",
      fromBase64(input.secret.startsWith(SECRET_PREFIX) ? input.secret.slice(SECRET_PREFIX.length) : input.secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign"]
    )
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
