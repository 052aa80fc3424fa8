import { Context, type Effect } from "effect"

/**
 * Computes the base64 HMAC-SHA256 of a message under a Standard Webhooks signing secret (`whsec_`
 * and base64, or bare base64). The library's default is WebCrypto (`webCryptoSigner` in the
 * webhooks area), which every runtime has; a host on Node passes `nodeHmacSigner` from
 * `omnichannel-core/node`, which signs on the calling thread.
 */
export class HmacSigner extends Context.Service<HmacSigner, {
  /** Names the implementation, for benchmarks and logs. */
  readonly name: string
  readonly sign: (secret: string, message: string) => Effect.Effect<string>
  /** The same MAC computed on the calling thread, where the runtime can: the webhook sender prefers it. */
  readonly signNow?: (secret: string, message: string) => string
  /**
   * Whether `mac` is the HMAC-SHA256 of `message` keyed by the UTF-8 bytes of `key` as they are (an
   * operator's app secret, not a Standard Webhooks secret), compared in constant time, on the calling
   * thread. Where the runtime can: the operator's webhook route prefers it to WebCrypto's `verify`.
   */
  readonly verifyNow?: (key: string, message: Uint8Array, mac: Uint8Array) => boolean
}>()("omnichannel-core/ports/HmacSigner") {}
