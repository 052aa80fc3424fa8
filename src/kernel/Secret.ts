import { Effect } from "effect"

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** `length` random characters from [0-9A-Za-z], drawn from the platform's CSPRNG without modulo bias. */
export const randomToken = (length: number): Effect.Effect<string> =>
  Effect.sync(() => {
    let out = ""
    const bytes = new Uint8Array(length * 2)
    while (out.length < length) {
      globalThis.crypto.getRandomValues(bytes)
      for (const byte of bytes) {
        // 248 = 62 * 4: bytes at or above it would favour the first characters.
        if (byte < 248 && out.length < length) out += BASE62[byte % 62]
      }
    }
    return out
  })

/** `bytes` random bytes from the platform's CSPRNG, base64-encoded. */
export const randomBase64 = (bytes: number): Effect.Effect<string> =>
  Effect.sync(() => {
    const buffer = new Uint8Array(bytes)
    globalThis.crypto.getRandomValues(buffer)
    return btoa(String.fromCharCode(...buffer))
  })

/** Lower-case hex SHA-256 of a UTF-8 string (Web Crypto, available on every runtime). */
export const sha256Hex = (value: string): Effect.Effect<string> =>
  Effect.promise(async () => {
    const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(value))
    return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("")
  })

/** Compares two strings in time that depends only on their lengths, never on where they differ. */
export const constantTimeEqual = (a: string, b: string): boolean => {
  const left = new TextEncoder().encode(a)
  const right = new TextEncoder().encode(b)
  let diff = left.length ^ right.length
  const length = Math.max(left.length, right.length)
  for (let i = 0; i < length; i++) diff |= (left[i] ?? 0) ^ (right[i] ?? 0)
  return diff === 0
}

/**
 * A credential in the form `<kind>_<lookup>_<secret>`. The lookup part finds the row; the secret
 * part is only ever stored as a hash and compared in constant time.
 */
export interface IssuedCredential {
  readonly raw: string
  readonly lookup: string
  readonly secretHash: string
  /** The visible start of the credential (`<kind>_<lookup>`), safe to show and to store. */
  readonly prefix: string
}

/** Issues a new credential of the given kind (`ock` API keys, `ocu` user tokens, …). */
export const issueCredential = (kind: string): Effect.Effect<IssuedCredential> =>
  Effect.gen(function*() {
    const lookup = yield* randomToken(12)
    const secret = yield* randomToken(40)
    const secretHash = yield* sha256Hex(secret)
    return { raw: `${kind}_${lookup}_${secret}`, lookup, secretHash, prefix: `${kind}_${lookup}` }
  })

/** Splits a presented credential of `kind` into its lookup and secret parts, or undefined when malformed. */
export const parseCredential = (
  kind: string,
  raw: string
): { readonly lookup: string; readonly secret: string } | undefined => {
  const match = new RegExp(`^${kind}_([0-9A-Za-z]{12})_([0-9A-Za-z]{40})$`).exec(raw)
  return match ? { lookup: match[1]!, secret: match[2]! } : undefined
}

/** True when `secret` hashes to `expectedHash`; the comparison is constant-time. */
export const verifySecret = (secret: string, expectedHash: string): Effect.Effect<boolean> =>
  Effect.map(sha256Hex(secret), (hash) => constantTimeEqual(hash, expectedHash))
