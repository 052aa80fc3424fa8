import { describe, expect, it } from "vitest"
import {
  breaksHeader,
  MAX_EMAIL_ATTACHMENT_BYTES,
  megabytes,
  messageIdFor,
  placeFiles,
  replyReferences,
  replySubject,
  totalSize
} from "../../../src/email/OutgoingEmail.ts"

describe("a reply's subject and references", () => {
  it("prefixes Re: once", () => {
    expect(replySubject("Invoice")).toBe("Re: Invoice")
    expect(replySubject("Re: Invoice")).toBe("Re: Invoice")
    expect(replySubject("RE:Invoice")).toBe("RE:Invoice")
    expect(replySubject("AW: Rechnung")).toBe("AW: Rechnung")
    expect(replySubject("  ")).toBe("Re:")
    expect(replySubject(null)).toBe("Re:")
  })

  it("carries the parent's references, then the parent, each once and at most 50", () => {
    expect(replyReferences({ references: ["a@x", "b@x"], message_id_header: "c@x" })).toEqual(["a@x", "b@x", "c@x"])
    expect(replyReferences({ references: ["a@x", "c@x"], message_id_header: "c@x" })).toEqual(["a@x", "c@x"])
    const long = Array.from({ length: 80 }, (_, i) => `${i}@x`)
    const refs = replyReferences({ references: long, message_id_header: "last@x" })
    expect(refs).toHaveLength(50)
    expect(refs.at(-1)).toBe("last@x")
  })
})

describe("placing files", () => {
  const files = [
    { attachmentId: "img", fileSize: 10, contentId: "abc@inline" },
    { attachmentId: "pdf", fileSize: 20, contentId: null },
    { attachmentId: "unused-img", fileSize: 5, contentId: "zzz@inline" }
  ]

  it("embeds an inline upload whose cid the HTML refers to; every other file stays a file", () => {
    expect(placeFiles(files, "<img src=\"cid:abc@inline\">")).toEqual([
      { attachmentId: "img", inline: true, contentId: "abc@inline" },
      { attachmentId: "pdf", inline: false, contentId: null },
      { attachmentId: "unused-img", inline: false, contentId: null }
    ])
  })

  it("embeds nothing without an HTML body", () => {
    expect(placeFiles(files, null).every((file) => !file.inline && file.contentId === null)).toBe(true)
  })

  it("sums raw sizes against the 20 MB limit", () => {
    expect(totalSize(files)).toBe(35)
    expect(MAX_EMAIL_ATTACHMENT_BYTES).toBe(20 * 1024 * 1024)
    expect(megabytes(21 * 1024 * 1024)).toBe("21.0 MB")
  })
})

describe("header values", () => {
  it("finds line breaks and NULs", () => {
    expect(breaksHeader("fine subject")).toBe(false)
    expect(breaksHeader("a\r\nBcc: x@y")).toBe(true)
    expect(breaksHeader("a\nb")).toBe(true)
    expect(breaksHeader("a\0b")).toBe(true)
  })

  it("makes Message-IDs in the mailbox's domain", () => {
    expect(messageIdFor("1234", "support@acme.example")).toBe("1234@acme.example")
  })
})
