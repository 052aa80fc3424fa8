import { Effect, Exit } from "effect"
import { Webhook, WebhookVerificationError } from "standardwebhooks"
import { describe, expect, it } from "vitest"
import { nodeHmacSigner as nativeSigner } from "../../../adapters/node/NodeHmacSigner.ts"
import type { HmacSigner } from "../../../src/ports/HmacSigner.ts"
import { sign, type SignatureHeaders, signThen, webCryptoSigner } from "../../../src/webhooks/Signature.ts"
import { newSigningSecret } from "../../../src/webhooks/WebhookEndpointService.ts"

const nowSeconds = () => Math.floor(Date.now() / 1000)

describe("the signer", () => {
  it("signs on the calling thread with node:crypto; WebCrypto (every runtime's) has no such path", () => {
    expect(nativeSigner.signNow).toBeTypeOf("function")
    expect(webCryptoSigner.signNow).toBeUndefined()
  })

  it("signs alike with node:crypto and WebCrypto, for many secrets and bodies", async () => {
    for (let i = 0; i < 50; i++) {
      const secret = await Effect.runPromise(newSigningSecret)
      const body = JSON.stringify({ n: i, text: "Zoë ✓ 🚀".repeat(i) })
      const [native, web] = await Promise.all([nativeSigner, webCryptoSigner].map((using) =>
        Effect.runPromise(sign({ secret, messageId: `evt_${i}`, timestampSeconds: 1_700_000_000 + i, body }, using))))
      expect(native).toEqual(web)
    }
  })
})

const signers: ReadonlyArray<HmacSigner["Service"]> = [nativeSigner, webCryptoSigner]

describe.each(signers)("Standard Webhooks signatures ($name)", (using) => {
  const sign_ = (input: Parameters<typeof sign>[0]) => sign(input, using)
  it("verifies with the standardwebhooks reference library", async () => {
    const secret = await Effect.runPromise(newSigningSecret)
    const body = JSON.stringify({ id: "evt_1", type: "contact.created", data: { name: "Zoë ✓" } })
    const headers = await Effect.runPromise(sign_({ secret, messageId: "evt_1", timestampSeconds: nowSeconds(), body }))
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body))
  })

  it("fails verification for a changed body, another secret or a stale timestamp", async () => {
    const secret = await Effect.runPromise(newSigningSecret)
    const other = await Effect.runPromise(newSigningSecret)
    const body = JSON.stringify({ id: "evt_2" })
    const fresh = await Effect.runPromise(sign_({ secret, messageId: "evt_2", timestampSeconds: nowSeconds(), body }))
    expect(() => new Webhook(secret).verify(`${body} `, { ...fresh })).toThrow(WebhookVerificationError)
    expect(() => new Webhook(other).verify(body, { ...fresh })).toThrow(WebhookVerificationError)
    const stale = await Effect.runPromise(sign_({ secret, messageId: "evt_2", timestampSeconds: nowSeconds() - 3600, body }))
    expect(() => new Webhook(secret).verify(body, { ...stale })).toThrow(WebhookVerificationError)
  })

  it("matches the Standard Webhooks specification's example", async () => {
    // The example of the specification's README: same secret, id, timestamp and payload.
    const headers = await Effect.runPromise(sign_({
      secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      messageId: "msg_p5jXN8AQM9LWM0D4loKWxJek",
      timestampSeconds: 1614265330,
      body: '{"test": 2432232314}'
    }))
    expect(headers["webhook-signature"]).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
  })
})

describe("signing outside a fiber (signThen)", () => {
  const input = { secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", messageId: "msg_1", timestampSeconds: 1614265330.9, body: '{"a":1}' }
  const signedThen = (using: HmacSigner["Service"], given = input) =>
    new Promise<{ readonly exit: Exit.Exit<SignatureHeaders>; readonly atOnce: boolean }>((resolve) => {
      let returned = false
      signThen(given, (exit) => resolve({ exit, atOnce: !returned }), using)
      returned = true
    })

  it("hands over what sign gives: at once with node:crypto, after the job with WebCrypto", async () => {
    const expected = await Effect.runPromise(sign(input, webCryptoSigner))
    const native = await signedThen(nativeSigner)
    const web = await signedThen(webCryptoSigner)
    expect(native).toEqual({ exit: Exit.succeed(expected), atOnce: true })
    expect(web).toEqual({ exit: Exit.succeed(expected), atOnce: false })
    expect(expected["webhook-timestamp"]).toBe("1614265330")
  })

  it("reports a secret that is not base64 as a defect rather than throwing", async () => {
    for (const using of signers) {
      const { exit } = await signedThen(using, { ...input, secret: "whsec_not base64!" })
      expect(Exit.hasDies(exit)).toBe(true)
    }
  })
})
