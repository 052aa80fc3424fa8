import { Effect, Exit } from "effect"

/** The three Standard Webhooks headers a delivery carries. */
export interface SignatureHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

/** Computes base64 HMAC-SHA256 of `message` under a `whsec_` (or bare base64) secret. */
export interface HmacSigner {
  readonly name: string
  readonly sign: (secret: string, message: string) => Effect.Effect<string>
  /** The same MAC computed on the calling thread, where the runtime can (`node:crypto`). */
  readonly signNow?: (secret: string, message: string) => string
}

const SECRET_PREFIX = "whsec_"

const secretBytes = (secret: string): Uint8Array<ArrayBuffer> => {
  const binary = atob(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret)
  const bytes = new Uint8Array(new ArrayBuffer(binary.length))
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

const toBase64 = (bytes: ArrayBuffer): string => btoa(String.fromCharCode(...new Uint8Array(bytes)))

/** A small most-recently-used cache: decoding or importing a key costs more than signing with it. */
const keyCache = <K>(make: (secret: string) => K) => {
  const keys = new Map<string, K>()
  return (secret: string): K => {
    let key = keys.get(secret)
    if (key === undefined) {
      if (keys.size >= 1000) keys.delete(keys.keys().next().value!)
      key = make(secret)
      keys.set(secret, key)
    }
    return key
  }
}

/** WebCrypto: everywhere (browsers, Deno, Bun, Node), but every call is a job on another thread. */
export const webCryptoSigner: HmacSigner = (() => {
  const keyFor = keyCache((secret) =>
    globalThis.crypto.subtle.importKey("raw", secretBytes(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
  )
  return {
    name: "WebCrypto",
    sign: (secret, message) =>
      Effect.promise(async () =>
        toBase64(await globalThis.crypto.subtle.sign("HMAC", await keyFor(secret), new TextEncoder().encode(message)))
      )
  }
})()

interface NodeCryptoHmac {
  readonly createSecretKey: (key: Uint8Array) => object
  readonly createHmac: (
    algorithm: "sha256",
    key: object
  ) => { update: (data: string) => { digest: (encoding: "base64") => string } }
}

/**
 * The runtime's synchronous `node:crypto`, found through `process.getBuiltinModule` (Node ≥ 22.3,
 * Bun, Deno) rather than imported, so this module still loads where there is none.
 */
const nodeCrypto = ((): NodeCryptoHmac | undefined => {
  const get = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule
  try {
    const found = typeof get === "function" ? get("node:crypto") as Partial<NodeCryptoHmac> | undefined : undefined
    return typeof found?.createHmac === "function" && typeof found.createSecretKey === "function"
      ? found as NodeCryptoHmac
      : undefined
  } catch {
    return undefined
  }
})()

/**
 * `node:crypto`'s HMAC, on the calling thread: a few microseconds, where WebCrypto's round trip costs
 * tens. Keys are kept as KeyObjects: passing raw bytes makes one per call, four times the signing.
 */
export const nativeSigner: HmacSigner | undefined = nodeCrypto === undefined ? undefined : (() => {
  const keyFor = keyCache((secret) => nodeCrypto.createSecretKey(secretBytes(secret)))
  const signNow = (secret: string, message: string) =>
    nodeCrypto.createHmac("sha256", keyFor(secret)).update(message).digest("base64")
  return {
    name: "node:crypto",
    sign: (secret, message) => Effect.sync(() => signNow(secret, message)),
    signNow
  }
})()

/** The signer deliveries use: the native one where the runtime has it, WebCrypto otherwise. */
export const signer: HmacSigner = nativeSigner ?? webCryptoSigner

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
export const sign = (input: SignatureInput, using: HmacSigner = signer): Effect.Effect<SignatureHeaders> => {
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
  using: HmacSigner = signer
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
