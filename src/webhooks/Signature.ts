import { Effect, Exit } from "effect"
import { keyCache } from "../kernel/KeyCache.ts"
import { signingKeyBytes } from "../kernel/SigningKey.ts"
import { HmacSigner } from "../ports/HmacSigner.ts"

/** The three Standard Webhooks headers a delivery carries. */
export interface SignatureHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

const toBase64 = (bytes: ArrayBuffer): string => btoa(String.fromCharCode(...new Uint8Array(bytes)))

/** WebCrypto: everywhere (browsers, Deno, Bun, Node), but every call is a job on another thread. */
export const webCryptoSigner: HmacSigner["Service"] = (() => {
  const keyFor = keyCache((secret) =>
    globalThis.crypto.subtle.importKey("raw", signingKeyBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  )
  return HmacSigner.of({
    name: "WebCrypto",
    sign: (secret, message) =>
      Effect.promise(async () =>
        toBase64(await globalThis.crypto.subtle.sign("HMAC", await keyFor(secret), new TextEncoder().encode(message)))
      )
  })
})()

/** What `sign` signs. */
export interface SignatureInput {
  readonly secret: string
  readonly messageId: string
  readonly timestampSeconds: number
  readonly body: string
}

/** The timestamp header's value and the text the MAC covers. */
const signedContent = (input: SignatureInput) => {
  const timestamp = String(Math.floor(input.timestampSeconds))
  return { timestamp, message: `${input.messageId}.${timestamp}.${input.body}` }
}

const headersOf = (messageId: string, timestamp: string, mac: string): SignatureHeaders => ({
  "webhook-id": messageId,
  "webhook-timestamp": timestamp,
  "webhook-signature": `v1,${mac}`
})

/**
 * Signs `body` by the Standard Webhooks scheme: `v1,` + base64 HMAC-SHA256, keyed by the
 * secret's base64 bytes, over `{webhook-id}.{webhook-timestamp}.{body}`. The timestamp is the
 * moment of sending in wall-clock seconds, so a delivery replayed hours later still verifies
 * within a receiver's tolerance.
 */
export const sign = (input: SignatureInput, using: HmacSigner["Service"]): Effect.Effect<SignatureHeaders> => {
  const { timestamp, message } = signedContent(input)
  return Effect.map(using.sign(input.secret, message), (mac) => headersOf(input.messageId, timestamp, mac))
}

/**
 * `sign` for callers outside a fiber: `done` gets the headers at once where the signer signs on the
 * calling thread, and after the signer's job otherwise. A secret that cannot be decoded is a defect.
 */
export const signThen = (
  input: SignatureInput,
  done: (headers: Exit.Exit<SignatureHeaders>) => void,
  using: HmacSigner["Service"]
): void => {
  if (using.signNow === undefined) return void Effect.runCallback(sign(input, using), { onExit: done })
  const { timestamp, message } = signedContent(input)
  let mac: string
  try {
    mac = using.signNow(input.secret, message)
  } catch (error) {
    return done(Exit.die(error))
  }
  done(Exit.succeed(headersOf(input.messageId, timestamp, mac)))
}
