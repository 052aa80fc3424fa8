import { describe, expect, it } from "vitest"
import { blockedExtension, HEAD_BYTES, meteredStream } from "../../../src/attachments/Upload.ts"

const streamOf = (chunks: ReadonlyArray<Uint8Array>, failAfter?: number) => {
  let index = 0
  return new ReadableStream<Uint8Array>({
    pull: (controller) => {
      if (failAfter !== undefined && index === failAfter) return controller.error(new Error("connection reset"))
      if (index === chunks.length) return controller.close()
      controller.enqueue(chunks[index++]!)
    }
  })
}
const drain = async (stream: ReadableStream<Uint8Array>) => {
  let bytes = 0
  for await (const chunk of stream) bytes += chunk.byteLength
  return bytes
}

describe("the extension blocklist", () => {
  it("refuses executables and scripts in any case and any position after the first dot", () => {
    expect(blockedExtension("invoice.pdf.exe")).toBe("exe")
    expect(blockedExtension("report.exe.pdf")).toBe("exe")
    expect(blockedExtension("deploy.SH")).toBe("SH")
    expect(blockedExtension("index.php")).toBe("php")
    expect(blockedExtension("photo.png")).toBeNull()
    expect(blockedExtension("exe")).toBeNull()
    expect(blockedExtension("archive.tar.gz")).toBeNull()
  })
  it("looks at the name as it would be stored, after invisible and control characters are removed", () => {
    expect(blockedExtension("invoice.ex\u200be")).toBe("exe")
    expect(blockedExtension("invoice.ex\u0001e")).toBe("exe")
    expect(blockedExtension("invoice.exe\u200b")).toBe("exe")
  })
})

describe("the upload meter", () => {
  it("passes every byte, counts them and keeps the head", async () => {
    const chunks = [new Uint8Array(3000).fill(1), new Uint8Array(3000).fill(2)]
    const { stream, state } = meteredStream(streamOf(chunks), 10_000)
    expect(await drain(stream)).toBe(6000)
    expect(state).toMatchObject({ bytes: 6000, tooLarge: false, sourceFailed: false })
    expect(state.head.byteLength).toBe(HEAD_BYTES)
    expect(state.head[2999]).toBe(1)
    expect(state.head[3000]).toBe(2)
  })
  it("takes exactly the limit, and errors at the byte past it, cancelling the source", async () => {
    expect(await drain(meteredStream(streamOf([new Uint8Array(10), new Uint8Array(10)]), 20).stream)).toBe(20)
    let cancelled = false
    const source = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(7)),
      cancel: () => {
        cancelled = true
      }
    })
    const { stream, state } = meteredStream(source, 20)
    await expect(drain(stream)).rejects.toThrow("File too large. Maximum size is 50.0MB")
    expect(state).toMatchObject({ tooLarge: true, bytes: 21 })
    expect(cancelled).toBe(true)
  })
  it("tells a source that broke off from one that was too large", async () => {
    const { stream, state } = meteredStream(streamOf([new Uint8Array(5), new Uint8Array(5)], 1), 100)
    await expect(drain(stream)).rejects.toThrow("connection reset")
    expect(state).toMatchObject({ tooLarge: false, sourceFailed: true })
    expect(state.sourceError).toBeInstanceOf(Error)
  })
})
