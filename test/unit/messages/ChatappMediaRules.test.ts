import { describe, expect, it } from "vitest"
import {
  describeLimit,
  isAnimatedWebp,
  mediaMessageOf,
  mediaRefusal,
  mediaTypeFor
} from "../../../src/messages/ChatappMediaRules.ts"

const KB = 1024
const MB = 1024 * 1024
const webpHead = (flags: number | null) => {
  const bytes = new Uint8Array(32)
  bytes.set(new TextEncoder().encode(flags === null ? "RIFF\0\0\0\0WEBPVP8 " : "RIFF\0\0\0\0WEBPVP8X"))
  if (flags !== null) bytes[20] = flags
  return bytes
}

describe("the operator's media limits", () => {
  it("derives the message type from a file's type, anything unknown being a document", () => {
    expect(["image/jpeg", "image/png; q=1", "image/webp", "video/mp4", "video/3gpp", "audio/ogg; codecs=opus", "audio/x-m4a", "application/ogg", "application/pdf", "image/gif", "text/csv"]
      .map(mediaTypeFor)).toEqual(["image", "image", "sticker", "video", "video", "audio", "audio", "audio", "document", "document", "document"])
  })

  it("takes each type up to its limit and refuses one byte more, naming the limit", () => {
    const at = (kind: Parameters<typeof mediaRefusal>[0], contentType: string, fileSize: number, animated: boolean | null = null) =>
      mediaRefusal(kind, { contentType, fileSize, animated })?.type ?? "ok"
    expect([at("image", "image/png", 5 * MB), at("image", "image/png", 5 * MB + 1)]).toEqual(["ok", "media_too_large"])
    expect([at("video", "video/mp4", 16 * MB), at("video", "video/mp4", 16 * MB + 1)]).toEqual(["ok", "media_too_large"])
    expect([at("audio", "audio/amr", 16 * MB), at("audio", "audio/amr", 16 * MB + 1)]).toEqual(["ok", "media_too_large"])
    expect([at("document", "application/zip", 100 * MB), at("document", "application/zip", 100 * MB + 1)]).toEqual(["ok", "media_too_large"])
    expect([at("sticker", "image/webp", 100 * KB), at("sticker", "image/webp", 100 * KB + 1)]).toEqual(["ok", "media_too_large"])
    expect([at("sticker", "image/webp", 500 * KB, true), at("sticker", "image/webp", 500 * KB + 1, true)]).toEqual(["ok", "media_too_large"])
    expect([at("image", "image/gif", 10), at("sticker", "image/png", 10), at("audio", "audio/wav", 10), at("document", "application/pdf", 0)])
      .toEqual(["media_type_not_supported", "media_type_not_supported", "media_type_not_supported", "media_empty"])
    expect(describeLimit("image")).toBe("image: JPEG or PNG, at most 5 MB")
    expect(describeLimit("sticker")).toBe("sticker: WebP, at most 100 KB static or 500 KB animated")
  })

  it("reads a WebP's animation flag from its extended header", () => {
    expect([isAnimatedWebp(webpHead(0x02)), isAnimatedWebp(webpHead(0x10)), isAnimatedWebp(webpHead(null)), isAnimatedWebp(new Uint8Array(4))])
      .toEqual([true, false, false, false])
  })

  it("puts the caption where the operator shows one and a document's name on it", () => {
    expect(mediaMessageOf("document", "m1", "Hi", "a.pdf")).toEqual({ type: "document", document: { id: "m1", caption: "Hi", filename: "a.pdf" } })
    expect(mediaMessageOf("image", "m2", null, "a.png")).toEqual({ type: "image", image: { id: "m2" } })
    expect(mediaMessageOf("audio", "m3", "ignored", "a.ogg")).toEqual({ type: "audio", audio: { id: "m3" } })
  })
})
