import { randomUUID } from "node:crypto"
import { createWriteStream } from "node:fs"
import { mkdir, open, rename, rm, stat, unlink, writeFile } from "node:fs/promises"
import { basename, dirname, join, resolve } from "node:path"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import type { ReadableStream as NodeReadableStream } from "node:stream/web"
import { Effect, Option, Predicate } from "effect"
import { BlobStore, BlobStoreError } from "../../src/ports/BlobStore.ts"

// Segments of letters, digits, dots, dashes and underscores joined by `/`: no absolute path, no
// backslash, no NUL, no `..` (no way out of the directory) and no `.` segment (no two keys for one file).
const KEY_PATTERN = /^[A-Za-z0-9._-]+(?:\/[A-Za-z0-9._-]+)*$/
const isValidKey = (key: string) => KEY_PATTERN.test(key) && !key.includes("..") && !key.split("/").includes(".")

const errnoOf = (error: unknown): string | undefined =>
  Predicate.hasProperty(error, "code") ? String(error.code) : undefined

/**
 * Blobs as files under `directory`, a key's `/` making subdirectories. A `put` writes a temporary
 * file beside the target, flushes it to disk and renames it over the target, so a reader sees the
 * old file or the whole new one; a failed, aborted or interrupted write removes its temporary file.
 */
export const makeFileBlobStore = (directory: string): BlobStore["Service"] => {
  const root = resolve(directory)

  const pathOf = (key: string): Effect.Effect<string, BlobStoreError> =>
    isValidKey(key)
      ? Effect.succeed(join(root, ...key.split("/")))
      : Effect.fail(new BlobStoreError({ message: `Invalid blob key ${JSON.stringify(key)}` }))

  const failure = (doing: string, key: string) => (cause: unknown) =>
    new BlobStoreError({
      message: `Could not ${doing} blob ${key}: ${cause instanceof Error ? cause.message : String(cause)}`,
      cause
    })

  // The cleanup runs inside the promise, so it happens even when an interruption stops waiting for it.
  const write = async (path: string, data: Uint8Array | ReadableStream<Uint8Array>, signal: AbortSignal) => {
    await mkdir(dirname(path), { recursive: true })
    const temporary = join(dirname(path), `.${basename(path)}.${randomUUID()}.partial`)
    try {
      if (data instanceof Uint8Array) {
        await writeFile(temporary, data, { flag: "wx", flush: true, signal })
      } else {
        await pipeline(
          Readable.fromWeb(data as NodeReadableStream<Uint8Array>),
          createWriteStream(temporary, { flags: "wx", flush: true }),
          { signal }
        )
      }
      const { size } = await stat(temporary)
      await rename(temporary, path)
      return { size }
    } catch (error) {
      await rm(temporary, { force: true })
      throw error
    }
  }

  return BlobStore.of({
    put: (key, data) =>
      Effect.flatMap(pathOf(key), (path) =>
        Effect.tryPromise({ try: (signal) => write(path, data, signal), catch: failure("write", key) })),
    get: (key) =>
      Effect.flatMap(pathOf(key), (path) =>
        Effect.tryPromise({
          try: async () => {
            const handle = await open(path, "r").catch((error: unknown) => {
              if (errnoOf(error) === "ENOENT") return undefined
              throw error
            })
            if (handle === undefined) return Option.none()
            const stats = await handle.stat().catch(async (error: unknown) => {
              await handle.close()
              throw error
            })
            if (!stats.isFile()) {
              await handle.close()
              return Option.none()
            }
            // The handle closes when the stream ends, fails or is cancelled.
            const stream = Readable.toWeb(handle.createReadStream()) as unknown as ReadableStream<Uint8Array>
            return Option.some(stream)
          },
          catch: failure("read", key)
        })),
    delete: (key) =>
      Effect.flatMap(pathOf(key), (path) =>
        Effect.tryPromise({
          try: async () => {
            try {
              await unlink(path)
            } catch (error) {
              if (errnoOf(error) !== "ENOENT") throw error
            }
          },
          catch: failure("delete", key)
        }))
  })
}
