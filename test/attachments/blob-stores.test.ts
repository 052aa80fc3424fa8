import { mkdtemp, readdir, readFile, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect, Fiber, Option } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { makeFileBlobStore } from "../../adapters/node/FileBlobStore.ts"
import { makeMemoryBlobStore } from "../../src/attachments/MemoryBlobStore.ts"
import type { BlobStore } from "../../src/ports/BlobStore.ts"

type Store = BlobStore["Service"]

const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(effect)
const bytesOf = (text: string) => new TextEncoder().encode(text)

const readAll = async (stream: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(stream).arrayBuffer())

const getBytes = async (store: Store, key: string) => {
  const found = await run(store.get(key))
  return Option.isNone(found) ? undefined : await readAll(found.value)
}

const streamOf = (chunks: ReadonlyArray<Uint8Array>) =>
  new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk)
      controller.close()
    }
  })

// Gives `before`, then fails: a sender that vanished halfway through.
const failingStream = (before: Uint8Array) => {
  let sent = false
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true
        controller.enqueue(before)
      } else {
        controller.error(new Error("connection reset"))
      }
    }
  })
}

// `chunks` chunks of 64 KiB made one at a time as the reader asks, with a running digest of what was sent.
const generatedStream = (chunks: number) => {
  let made = 0
  const sent: Array<Uint8Array> = []
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (made === chunks) return controller.close()
      const chunk = new Uint8Array(64 * 1024)
      globalThis.crypto.getRandomValues(chunk.subarray(0, 65_536))
      made++
      sent.push(chunk.subarray(0, 16))
      controller.enqueue(chunk)
    }
  }, { highWaterMark: 0 })
  return { stream, firstBytesOfEachChunk: sent }
}

const directories: Array<string> = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true })
})

const fileStore = async () => {
  const directory = await mkdtemp(join(tmpdir(), "omni-blobs-"))
  directories.push(directory)
  return { store: makeFileBlobStore(directory), directory }
}

const allFiles = async (directory: string) =>
  (await readdir(directory, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(directory.length + 1))
    .sort()

const stores: ReadonlyArray<{ readonly name: string; readonly make: () => Promise<Store> }> = [
  { name: "memory", make: async () => makeMemoryBlobStore() },
  { name: "files", make: async () => (await fileStore()).store }
]

describe.each(stores)("the $name blob store", ({ make }) => {
  it("gives back the bytes it was given, from bytes or from a stream, and replaces them on a second put", async () => {
    const store = await make()
    expect(await run(store.put("tenant-1/a", bytesOf("first")))).toEqual({ size: 5 })
    expect(await getBytes(store, "tenant-1/a")).toEqual(bytesOf("first"))
    expect(await run(store.put("tenant-1/a", streamOf([bytesOf("sec"), bytesOf("ond!")])))).toEqual({ size: 7 })
    expect(await getBytes(store, "tenant-1/a")).toEqual(bytesOf("second!"))
  })

  it("keeps a copy: changing the caller's buffer afterwards changes nothing stored", async () => {
    const store = await make()
    const buffer = bytesOf("original")
    await run(store.put("k", buffer))
    buffer.fill(0)
    expect(await getBytes(store, "k")).toEqual(bytesOf("original"))
  })

  it("stores empty blobs", async () => {
    const store = await make()
    expect(await run(store.put("empty", new Uint8Array(0)))).toEqual({ size: 0 })
    expect(await getBytes(store, "empty")).toEqual(new Uint8Array(0))
  })

  it("answers none for a key never written", async () => {
    const store = await make()
    expect(Option.isNone(await run(store.get("tenant-1/missing")))).toBe(true)
  })

  it("keeps the old bytes, or nothing, when a stream fails midway", async () => {
    const store = await make()
    await run(store.put("tenant-1/kept", bytesOf("whole old file")))
    const failed = await run(Effect.flip(store.put("tenant-1/kept", failingStream(bytesOf("half of a new")))))
    expect(failed._tag).toBe("BlobStoreError")
    expect(await getBytes(store, "tenant-1/kept")).toEqual(bytesOf("whole old file"))

    const fresh = await run(Effect.flip(store.put("tenant-1/new", failingStream(bytesOf("half")))))
    expect(fresh._tag).toBe("BlobStoreError")
    expect(Option.isNone(await run(store.get("tenant-1/new")))).toBe(true)
  })

  it.each([
    ["a parent segment", "../escape"],
    ["a parent segment inside", "tenant/../../escape"],
    ["a current-directory segment", "tenant/./file"],
    ["an absolute path", "/etc/passwd"],
    ["a backslash", "tenant\\file"],
    ["a NUL", "tenant/fi\u0000le"],
    ["an empty key", ""],
    ["an empty segment", "tenant//file"],
    ["a trailing slash", "tenant/"],
    ["a space", "tenant/my file"],
    ["a non-ASCII letter", "tenant/é"]
  ])("refuses a key with %s, for put, get and delete", async (_, key) => {
    const store = await make()
    for (const effect of [store.put(key, bytesOf("x")), store.get(key), store.delete(key)]) {
      const error = await Effect.runPromise(Effect.flip(effect as Effect.Effect<unknown, { readonly _tag: string }>))
      expect(error._tag).toBe("BlobStoreError")
    }
  })

  it("deletes, and deleting again (or what never was) succeeds", async () => {
    const store = await make()
    await run(store.put("tenant-1/gone", bytesOf("x")))
    await run(store.delete("tenant-1/gone"))
    expect(Option.isNone(await run(store.get("tenant-1/gone")))).toBe(true)
    await run(store.delete("tenant-1/gone"))
    await run(store.delete("never/was"))
  })

  it("round-trips 5 MiB arriving as a stream of 64 KiB chunks", async () => {
    const store = await make()
    const { stream, firstBytesOfEachChunk } = generatedStream(80)
    expect(await run(store.put("tenant-1/big", stream))).toEqual({ size: 80 * 64 * 1024 })
    const back = await getBytes(store, "tenant-1/big")
    expect(back?.byteLength).toBe(80 * 64 * 1024)
    firstBytesOfEachChunk.forEach((start, i) => expect(back!.subarray(i * 65_536, i * 65_536 + 16)).toEqual(start))
  })
})

describe("the file blob store", () => {
  it("keeps each blob as a file at its key's path, and no temporary file after a put", async () => {
    const { store, directory } = await fileStore()
    await run(store.put("tenant-1/a", bytesOf("one")))
    await run(store.put("tenant-1/b", streamOf([bytesOf("two")])))
    expect(await allFiles(directory)).toEqual(["tenant-1/a", "tenant-1/b"])
    expect(await readFile(join(directory, "tenant-1", "a"), "utf8")).toBe("one")
  })

  it("leaves no temporary file when the stream fails midway", async () => {
    const { store, directory } = await fileStore()
    await run(store.put("tenant-1/kept", bytesOf("old")))
    await Effect.runPromiseExit(store.put("tenant-1/kept", failingStream(new Uint8Array(100_000))))
    await Effect.runPromiseExit(store.put("tenant-1/new", failingStream(new Uint8Array(100_000))))
    expect(await allFiles(directory)).toEqual(["tenant-1/kept"])
  })

  it("leaves no temporary file when the put is interrupted while the stream hangs", async () => {
    const { store, directory } = await fileStore()
    let pulled = false
    const hanging = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (pulled) return new Promise<void>(() => {})
        pulled = true
        controller.enqueue(new Uint8Array(1000))
      }
    })
    await Effect.runPromise(Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(store.put("tenant-1/hangs", hanging))
      // Wait until the temporary file exists, so the interruption lands mid-write.
      yield* Effect.promise(async () => {
        while ((await allFiles(directory)).length === 0) await new Promise((r) => setTimeout(r, 5))
      })
      yield* Fiber.interrupt(fiber)
    }))
    // The cleanup finishes on its own after the interruption: wait for it, briefly.
    for (let i = 0; i < 200 && (await allFiles(directory)).length > 0; i++) await new Promise((r) => setTimeout(r, 5))
    expect(await allFiles(directory)).toEqual([])
  })

  it("answers none for a key that is a directory", async () => {
    const { store } = await fileStore()
    await run(store.put("tenant-1/a", bytesOf("x")))
    expect(Option.isNone(await run(store.get("tenant-1")))).toBe(true)
  })

  it("closes the file when the reader cancels, and when nothing was there to open", async () => {
    const { store } = await fileStore()
    const openFiles = async () => (await readdir("/proc/self/fd")).length
    await run(store.put("tenant-1/big", new Uint8Array(1024 * 1024)))
    const before = await openFiles()
    const reader = Option.getOrThrow(await run(store.get("tenant-1/big"))).getReader()
    await reader.read()
    expect(await openFiles()).toBe(before + 1)
    await reader.cancel()
    for (let i = 0; i < 200 && (await openFiles()) > before; i++) await new Promise((r) => setTimeout(r, 5))
    expect(await openFiles()).toBe(before)
    await run(store.get("tenant-1"))
    expect(await openFiles()).toBe(before)
  })
})
