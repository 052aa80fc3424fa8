import { access } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import type { Worker as ThreadWorker } from "node:worker_threads"
import Tesseract from "tesseract.js"

/** Why OCR gave no text: `Unreadable` (the image could not be decoded), `Timeout`, `Unavailable` (closed, or no language data). */
export class OcrError extends Error {
  constructor(readonly reason: "Unreadable" | "Timeout" | "Unavailable", message: string) {
    super(message)
    this.name = "OcrError"
  }
}

/** One tesseract.js worker thread, started on first use and reused, one image at a time. */
export interface Ocr {
  /**
   * The text tesseract reads in `bytes` (PNG, JPEG, GIF, WebP, BMP, TIFF), lines kept. Waits for
   * earlier images first; `timeoutMs` bounds this image's own turn (worker start included), after
   * which, or when `signal` aborts, the worker is ended and the next image starts a new one.
   */
  readonly recognize: (bytes: Uint8Array, timeoutMs: number, signal?: AbortSignal) => Promise<string>
  /** Ends the worker; later calls fail with `Unavailable`. */
  readonly close: () => Promise<void>
}

/**
 * The English data `@tesseract.js-data/eng` installs (the LSTM-only "best_int" model, 2.9 MB
 * gzipped): a local directory, so tesseract.js reads it from disk and never turns to its CDN.
 */
export const installedEnglishData = (): string =>
  join(dirname(createRequire(import.meta.url).resolve("@tesseract.js-data/eng/package.json")), "4.0.0_best_int")

const reasonOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/**
 * An OCR engine over tesseract.js 7 (WebAssembly, in a worker thread). The language data comes from
 * `langPath` (default: the installed English package) and is neither fetched nor cached to disk
 * (`cacheMethod: "none"`); images are handed over as bytes, never as URLs: nothing goes to the network.
 */
export const makeOcr = (langPath: string = installedEnglishData()): Ocr => {
  let worker: Promise<Tesseract.Worker> | undefined
  let closed = false
  // Images take turns: the chain's tail settles when the last queued image is done.
  let tail: Promise<unknown> = Promise.resolve()

  const start = (): Promise<Tesseract.Worker> => {
    // tesseract.js settles `createWorker` only when its first step fails; a failure to load the
    // language data reaches the error handler alone, so that handler fails the start too.
    let startFailed: (error: Error) => void = () => {}
    const failedStart = new Promise<never>((_, reject) => {
      startFailed = reject
    })
    failedStart.catch(() => undefined)
    const started = access(join(langPath, "eng.traineddata.gz"))
      .catch(() => {
        throw new Error(`no OCR language data at ${join(langPath, "eng.traineddata.gz")}`)
      })
      .then(() =>
        Promise.race([
          Tesseract.createWorker("eng", Tesseract.OEM.LSTM_ONLY, {
            langPath,
            gzip: true,
            cacheMethod: "none",
            // Without a handler tesseract.js throws a worker's failure from a message listener,
            // which would end the process; with one, only the failed job's promise rejects.
            errorHandler: (error: unknown) => startFailed(new Error(`${String(error)} (language data from ${langPath})`))
          }),
          failedStart
        ])
      )
      .then((created) => {
        // A worker thread that dies emits `error`; unheard, that too would end the process.
        const thread = (created as unknown as { readonly worker?: ThreadWorker }).worker
        thread?.on("error", () => {
          if (worker === started) worker = undefined
        })
        return created
      })
    worker = started
    // A failed start is reported to the image that waited for it; the next image tries again.
    started.catch(() => {
      if (worker === started) worker = undefined
    })
    return started
  }

  const stop = (ending: Promise<Tesseract.Worker> | undefined) => {
    if (ending === undefined) return Promise.resolve()
    if (worker === ending) worker = undefined
    return ending.then((w) => w.terminate(), () => undefined).then(() => undefined, () => undefined)
  }

  const run = async (bytes: Uint8Array, timeoutMs: number, signal?: AbortSignal): Promise<string> => {
    if (closed) throw new OcrError("Unavailable", "the OCR engine is closed")
    signal?.throwIfAborted()
    const current = worker ?? start()
    let timer: ReturnType<typeof setTimeout> | undefined
    let onAbort: (() => void) | undefined
    const cut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new OcrError("Timeout", `reading the image's text took longer than ${timeoutMs} ms`)), timeoutMs)
      onAbort = () => reject(new OcrError("Timeout", "reading the image's text was abandoned"))
      signal?.addEventListener("abort", onAbort, { once: true })
    })
    try {
      const ready = await Promise.race([
        current.catch((error: unknown) => {
          throw new OcrError("Unavailable", `the OCR engine could not start: ${reasonOf(error)}`)
        }),
        cut
      ])
      const image = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      const result = await Promise.race([
        ready.recognize(image).catch((error: unknown) => {
          throw new OcrError("Unreadable", `the image could not be decoded: ${reasonOf(error)}`)
        }),
        cut
      ])
      return result.data.text
    } catch (error) {
      // A worker that timed out may be mid-job: it is replaced. One that could not decode an image
      // answered, and reads the next one.
      if (error instanceof OcrError && error.reason === "Timeout") void stop(current)
      throw error
    } finally {
      clearTimeout(timer)
      if (onAbort !== undefined) signal?.removeEventListener("abort", onAbort)
    }
  }

  return {
    recognize: (bytes, timeoutMs, signal) => {
      const turn = tail.then(() => run(bytes, timeoutMs, signal))
      tail = turn.catch(() => undefined)
      return turn
    },
    close: async () => {
      closed = true
      await tail
      await stop(worker)
    }
  }
}
