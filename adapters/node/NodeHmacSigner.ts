import { createHmac, createSecretKey, type KeyObject, timingSafeEqual } from "node:crypto"
import { Effect } from "effect"
import { keyCache } from "../../src/kernel/KeyCache.ts"
import { signingKeyBytes } from "../../src/kernel/SigningKey.ts"
import { HmacSigner } from "../../src/ports/HmacSigner.ts"

/**
 * `node:crypto`'s HMAC, on the calling thread: a few microseconds, where WebCrypto's round trip costs
 * tens. Keys are kept as KeyObjects: passing raw bytes makes one per call, four times the signing.
 */
export const nodeHmacSigner: HmacSigner["Service"] = (() => {
  const keyFor = keyCache((secret): KeyObject => createSecretKey(signingKeyBytes(secret)))
  const rawKeyFor = keyCache((key): KeyObject => createSecretKey(Buffer.from(key, "utf8")))
  const signNow = (secret: string, message: string) => createHmac("sha256", keyFor(secret)).update(message).digest("base64")
  return HmacSigner.of({
    name: "node:crypto",
    sign: (secret, message) => Effect.sync(() => signNow(secret, message)),
    signNow,
    verifyNow: (key, message, mac) => {
      const expected = createHmac("sha256", rawKeyFor(key)).update(message).digest()
      return expected.length === mac.length && timingSafeEqual(expected, mac)
    }
  })
})()
