import { crc32 } from "node:zlib"
import { Effect } from "effect"
import { describe, expect, it } from "vitest"
import { detectContentType, extensionFor, safeFilename } from "../../src/attachments/ContentCheck.ts"

const text = (value: string) => new TextEncoder().encode(value)
const detect = (bytes: Uint8Array, declared: string | null) => Effect.runPromise(detectContentType(bytes, declared))

// A real 1×1 PNG.
const PNG = Uint8Array.from(
  atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="),
  (c) => c.charCodeAt(0)
)
// A JFIF header and the end-of-image marker.
const JPEG = Uint8Array.from([
  0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
  0xff, 0xd9
])
const PDF = text("%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")
// An Ogg page whose first packet is an Opus header: a voice note.
const OPUS = (() => {
  const bytes = new Uint8Array(64)
  bytes.set(text("OggS"), 0)
  bytes.set(text("OpusHead"), 28)
  return bytes
})()

/** A real ZIP archive holding one stored (uncompressed) file. */
const zipOf = (name: string, content: string) => {
  const nameBytes = text(name)
  const data = text(content)
  const crc = crc32(data)
  const local = new DataView(new ArrayBuffer(30))
  local.setUint32(0, 0x04034b50, true)
  local.setUint16(4, 10, true)
  local.setUint32(14, crc, true)
  local.setUint32(18, data.length, true)
  local.setUint32(22, data.length, true)
  local.setUint16(26, nameBytes.length, true)
  const central = new DataView(new ArrayBuffer(46))
  central.setUint32(0, 0x02014b50, true)
  central.setUint16(4, 20, true)
  central.setUint16(6, 10, true)
  central.setUint32(16, crc, true)
  central.setUint32(20, data.length, true)
  central.setUint32(24, data.length, true)
  central.setUint16(28, nameBytes.length, true)
  const centralOffset = 30 + nameBytes.length + data.length
  const end = new DataView(new ArrayBuffer(22))
  end.setUint32(0, 0x06054b50, true)
  end.setUint16(8, 1, true)
  end.setUint16(10, 1, true)
  end.setUint32(12, 46 + nameBytes.length, true)
  end.setUint32(16, centralOffset, true)
  const parts = [new Uint8Array(local.buffer), nameBytes, data, new Uint8Array(central.buffer), nameBytes, new Uint8Array(end.buffer)]
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

describe("detectContentType: bytes a file-type parser recognises", () => {
  it.each([
    ["PNG", PNG, "image/png", "image/png"],
    ["JPEG", JPEG, "image/jpeg", "image/jpeg"],
    ["PDF", PDF, "application/pdf", "application/pdf"],
    ["ZIP", zipOf("notes.txt", "hello"), "application/zip", "application/zip"],
    ["Opus voice note", OPUS, "audio/ogg; codecs=opus", "audio/ogg; codecs=opus"]
  ])("recognises %s and agrees with its own declared type", async (_, bytes, declared, expected) => {
    expect(await detect(bytes, declared)).toEqual({ contentType: expected, matches: true })
  })

  it("keeps the detected type and flags the mismatch when the declared type disagrees", async () => {
    expect(await detect(PNG, "application/pdf")).toEqual({ contentType: "image/png", matches: false })
    expect(await detect(PDF, "image/jpeg")).toEqual({ contentType: "application/pdf", matches: false })
    expect(await detect(zipOf("a.exe", "MZ"), "image/png")).toEqual({ contentType: "application/zip", matches: false })
  })

  it("treats image/jpg as image/jpeg, ignores parameters and case, and takes application/ogg for audio/ogg", async () => {
    expect((await detect(JPEG, "image/jpg")).matches).toBe(true)
    expect((await detect(JPEG, "IMAGE/JPEG; q=1")).matches).toBe(true)
    expect(await detect(OPUS, "audio/ogg")).toEqual({ contentType: "audio/ogg; codecs=opus", matches: true })
    expect((await detect(OPUS, "application/ogg")).matches).toBe(true)
  })

  it("matches when nothing was declared, and not when the declared type is no media type", async () => {
    expect(await detect(PNG, null)).toEqual({ contentType: "image/png", matches: true })
    expect(await detect(PNG, "")).toEqual({ contentType: "image/png", matches: true })
    expect(await detect(PNG, "png please")).toEqual({ contentType: "image/png", matches: false })
  })
})

describe("detectContentType: bytes with no magic number", () => {
  it.each([
    ["plain text", "hello, world\n", "text/plain", "text/plain"],
    ["CSV", "name,phone\nZoë,+14155550100\n", "text/csv", "text/csv"],
    ["JSON", "{\"a\": 1}", "application/json", "application/json"],
    ["a +json type", "{\"a\": 1}", "application/ld+json", "application/ld+json"],
    ["text with its charset", "hello", "text/plain; charset=UTF-8", "text/plain; charset=utf-8"],
    ["text with other parameters", "hello", "text/plain; format=flowed", "text/plain"]
  ])("keeps a declared text-like type: %s", async (_, content, declared, expected) => {
    expect(await detect(text(content), declared)).toEqual({ contentType: expected, matches: true })
  })

  it("recognises a vCard by its BEGIN line", async () => {
    const card = text("BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Zoë\r\nEND:VCARD\r\n")
    expect(await detect(card, "text/vcard")).toEqual({ contentType: "text/vcard", matches: true })
    expect(await detect(card, "text/x-vcard")).toEqual({ contentType: "text/vcard", matches: false })
  })

  it("serves as application/octet-stream what is declared as anything but text", async () => {
    const unknown = text("<svg onload=alert(1)>")
    expect(await detect(unknown, "image/png")).toEqual({ contentType: "application/octet-stream", matches: false })
    expect(await detect(unknown, "image/svg+xml")).toEqual({ contentType: "application/octet-stream", matches: false })
    expect(await detect(Uint8Array.from([1, 2, 3, 4]), "application/x-msdownload")).toEqual({
      contentType: "application/octet-stream",
      matches: false
    })
  })

  it("answers application/octet-stream, matching, when nothing or octet-stream itself was declared", async () => {
    expect(await detect(text("hello"), null)).toEqual({ contentType: "application/octet-stream", matches: true })
    expect(await detect(text("hello"), "application/octet-stream")).toEqual({
      contentType: "application/octet-stream",
      matches: true
    })
    expect(await detect(new Uint8Array(0), null)).toEqual({ contentType: "application/octet-stream", matches: true })
  })

  it("never keeps a declared type that could carry a header line", async () => {
    expect(await detect(text("hello"), "text/plain\r\nSet-Cookie: a=b")).toEqual({
      contentType: "application/octet-stream",
      matches: false
    })
  })
})

describe("safeFilename", () => {
  it.each([
    ["../../etc/passwd", "etcpasswd"],
    ["a\u0000b.pdf", "ab.pdf"],
    ["C:\\Users\\zoe\\report.pdf", "C:Userszoereport.pdf"],
    ["line\r\nbreak.txt", "linebreak.txt"],
    ["  .hidden.txt. ", "hidden.txt"],
    ["invoice\u202Efdp.exe", "invoicefdp.exe"],
    ["Zoë résumé ✓.pdf", "Zoë résumé ✓.pdf"],
    ["Zoe\u0308.txt", "Zoë.txt"]
  ])("makes %j safe as %j", (name, safe) => {
    expect(safeFilename(name, "fallback.bin")).toBe(safe)
  })

  it.each(["", "...", " / ", "\u0000\u0001", "\\..\\"])("answers the fallback when nothing is left of %j", (name) => {
    expect(safeFilename(name, "image-1a2b3c4d.png")).toBe("image-1a2b3c4d.png")
  })

  it("cuts a 300-character name to 200, keeping its extension", () => {
    const safe = safeFilename(`${"a".repeat(296)}.pdf`, "x")
    expect(safe).toHaveLength(200)
    expect(safe).toBe(`${"a".repeat(196)}.pdf`)
  })

  it("counts characters, not UTF-16 units, and never splits one", () => {
    const safe = safeFilename(`${"😀".repeat(300)}.jpeg`, "x")
    expect(Array.from(safe)).toHaveLength(200)
    expect(safe.endsWith(".jpeg")).toBe(true)
    expect(safe).toBe(`${"😀".repeat(195)}.jpeg`)
  })

  it("cuts a long name without an extension at 200", () => {
    expect(safeFilename("b".repeat(300), "x")).toBe("b".repeat(200))
  })

  it("leaves a short name as it is", () => {
    expect(safeFilename("Quarterly report (final).xlsx", "x")).toBe("Quarterly report (final).xlsx")
  })
})

describe("extensionFor", () => {
  it.each([
    ["image/png", "png"],
    ["image/jpeg", "jpg"],
    ["image/jpg", "jpg"],
    ["IMAGE/JPEG", "jpg"],
    ["application/pdf", "pdf"],
    ["audio/ogg; codecs=opus", "opus"],
    ["audio/ogg", "ogg"],
    ["video/mp4", "mp4"],
    ["text/plain; charset=utf-8", "txt"],
    ["text/vcard", "vcf"],
    ["application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"],
    ["application/octet-stream", "bin"],
    ["application/x-unheard-of", "bin"],
    ["not a type", "bin"]
  ])("%s → %s", (contentType, extension) => {
    expect(extensionFor(contentType)).toBe(extension)
  })
})
