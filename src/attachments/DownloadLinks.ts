import { Clock, Context, Effect, Option } from "effect"

/** What a valid download link names, and until when (unix seconds) it is valid. */
export interface DownloadTarget {
  readonly tenantId: string
  readonly attachmentId: string
  readonly expiresAt: number
}

/**
 * Signed, expiring links to attachments' bytes, served by the host outside `/api/v1`: the signature
 * is the credential, so whoever holds the link may download until it expires, with no API key.
 */
export class DownloadLinks extends Context.Service<DownloadLinks, {
  /** An absolute URL to the attachment, valid for the configured time from now. */
  readonly sign: (tenantId: string, attachmentId: string) => Effect.Effect<string>
  /** What `url` names, when it was signed here and has not expired; none for anything else. */
  readonly verify: (url: URL) => Effect.Effect<Option.Option<DownloadTarget>>
}>()("omnichannel-core/attachments/DownloadLinks") {}

/** How download links are made. */
export interface DownloadLinksOptions {
  /** The HMAC key; a long random secret the host keeps, the same in every process that serves links. */
  readonly secret: string
  /** The base of URLs handed out, e.g. `https://app.example.com`, read when a link is made. */
  readonly publicUrl: () => string
  /** Where the host serves downloads below `publicUrl`; `/files` when not given. */
  readonly path?: string
  /** How long a link is valid; an hour when not given. */
  readonly ttlSeconds?: number
}

const encoder = new TextEncoder()

const toBase64Url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")

const fromBase64Url = (text: string): Uint8Array<ArrayBuffer> | undefined => {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return undefined
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"))
    return Uint8Array.from(binary, (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
}

// Versioned and line-separated: ids never hold a newline, so no two triples sign the same text.
const signedText = (tenantId: string, attachmentId: string, exp: string) =>
  encoder.encode(`v1\n${tenantId}\n${attachmentId}\n${exp}`)

/**
 * Download links signed with HMAC-SHA256 (WebCrypto, so any runtime): the URL is
 * `${publicUrl}${path}/${attachmentId}?t=${tenantId}&exp=${unixSeconds}&sig=${base64url}`. Expiry
 * is read from Effect's Clock, so a test clock or the host's manual clock moves it.
 */
export const makeDownloadLinks = (options: DownloadLinksOptions): DownloadLinks["Service"] => {
  if (options.secret.length === 0) throw new Error("makeDownloadLinks: the secret must not be empty")
  const path = (options.path ?? "/files").replace(/\/+$/, "")
  const ttlSeconds = options.ttlSeconds ?? 3600
  // Imported once, on first use.
  let key: Promise<CryptoKey> | undefined
  const keyOf = () =>
    key ??= globalThis.crypto.subtle.importKey(
      "raw",
      encoder.encode(options.secret),
      { name: "HMAC", hash: "SHA-256" },
      false,
      ["sign", "verify"]
    )
  const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))

  return DownloadLinks.of({
    sign: (tenantId, attachmentId) =>
      Effect.gen(function*() {
        const exp = String((yield* nowSeconds) + ttlSeconds)
        const signature = yield* Effect.promise(async () =>
          new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", await keyOf(), signedText(tenantId, attachmentId, exp)))
        )
        const query = new URLSearchParams({ t: tenantId, exp, sig: toBase64Url(signature) })
        return `${options.publicUrl().replace(/\/+$/, "")}${path}/${encodeURIComponent(attachmentId)}?${query}`
      }),
    verify: (url) =>
      Effect.gen(function*() {
        const rest = url.pathname.startsWith(`${path}/`) ? url.pathname.slice(path.length + 1) : ""
        const tenantId = url.searchParams.get("t")
        const exp = url.searchParams.get("exp")
        const signature = fromBase64Url(url.searchParams.get("sig") ?? "")
        if (rest === "" || rest.includes("/") || tenantId === null || exp === null || !/^\d{1,12}$/.test(exp) ||
          signature === undefined) {
          return Option.none()
        }
        let attachmentId: string
        try {
          attachmentId = decodeURIComponent(rest)
        } catch {
          return Option.none()
        }
        // crypto.subtle.verify compares in constant time.
        const valid = yield* Effect.promise(async () =>
          globalThis.crypto.subtle.verify("HMAC", await keyOf(), signature, signedText(tenantId, attachmentId, exp))
        )
        const expiresAt = Number(exp)
        if (!valid || expiresAt <= (yield* nowSeconds)) return Option.none()
        return Option.some({ tenantId, attachmentId, expiresAt })
      })
  })
}
