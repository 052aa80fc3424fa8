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
}>()("omnichannel-core/ports/HmacSigner") {}
