import { Effect, Option } from "effect"
import { BlobStore, BlobStoreError } from "../ports/BlobStore.ts"

// The same rule as the file store's, so a key that works in tests works on disk.
const KEY_PATTERN = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/
const isValidKey = (key: string) => KEY_PATTERN.test(key) && !key.includes("..") && !key.split("/").includes(".")

const checkKey = (key: string): Effect.Effect<void, BlobStoreError> =>
  isValidKey(key)
    ? Effect.void
    : Effect.fail(new BlobStoreError({ message: `Invalid blob key ${JSON.stringify(key)}` }))

const readAll = (stream: ReadableStream<Uint8Array>): Effect.Effect<Uint8Array, BlobStoreError> =>
  Effect.tryPromise({
    try: async () => {
      const chunks: Array<Uint8Array> = []
      let size = 0
      for await (const chunk of stream) {
        chunks.push(chunk)
        size += chunk.byteLength
      }
      const bytes = new Uint8Array(size)
      let offset = 0
      for (const chunk of chunks) {
        bytes.set(chunk, offset)
        offset += chunk.byteLength
      }
      return bytes
    },
    catch: (cause) => new BlobStoreError({ message: "The blob's stream failed before its end", cause })
  })

/**
 * Blobs in a Map, for tests and for hosts that give no blob store (their bytes last as long as the
 * process). A `put` stores nothing until its stream has ended, so a failed write leaves nothing.
 */
export const makeMemoryBlobStore = (): BlobStore["Service"] => {
  const blobs = new Map<string, Uint8Array>()
  return BlobStore.of({
    put: (key, data) =>
      Effect.gen(function*() {
        yield* checkKey(key)
        // A copy: the caller may reuse its buffer.
        const bytes = data instanceof Uint8Array ? data.slice() : yield* readAll(data)
        blobs.set(key, bytes)
        return { size: bytes.byteLength }
      }),
    get: (key) =>
      Effect.map(checkKey(key), () =>
        Option.map(Option.fromUndefinedOr(blobs.get(key)), (bytes) =>
          new ReadableStream<Uint8Array>({
            start(controller) {
              controller.enqueue(bytes.slice())
              controller.close()
            }
          }))),
    delete: (key) =>
      Effect.map(checkKey(key), () => {
        blobs.delete(key)
      })
  })
}
