import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"

/**
 * WAL pages at which the application's own connection checkpoints anyway (SQLite's default is 1,000):
 * the write-ahead log stays bounded should the background thread fall behind or fail.
 */
export const FALLBACK_CHECKPOINT_PAGES = 4_000

/** How often the thread checkpoints while writes keep coming, and at most how long it waits when idle. */
const BUSY_EVERY_MS = 50
const IDLE_EVERY_MS = 1_000

// The thread: its own connection to the file, checkpointing passively (never waiting on, nor blocking,
// the application's writes and reads). It looks every 50 ms while frames keep arriving and backs off to
// once a second while the log is quiet. It says when its connection is open, and a close request waits
// for that: messages are handled only after this script has run. CommonJS, since it runs from a string.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads")
const Database = require(workerData.module)
const db = new Database(workerData.path, { fileMustExist: true })
db.pragma("busy_timeout = 1000")
parentPort.postMessage({ ready: true })
let every = workerData.busyEveryMs
let timer
const checkpoint = () => {
  let copied = 0
  try {
    copied = db.pragma("wal_checkpoint(PASSIVE)")[0].checkpointed
  } catch (error) {
    parentPort.postMessage({ failed: String(error && error.message || error) })
  }
  every = copied > 0 ? workerData.busyEveryMs : Math.min(every * 2, workerData.idleEveryMs)
  timer = setTimeout(checkpoint, every)
}
timer = setTimeout(checkpoint, every)
parentPort.on("message", () => {
  clearTimeout(timer)
  db.close()
  parentPort.close()
})
`

/** A running background checkpointer. */
export interface BackgroundCheckpoints {
  /**
   * Stops the thread and resolves once it has exited, having closed its connection (the last
   * connection to close checkpoints fully and removes the log). A thread still starting finishes
   * starting first: ended while it loads better-sqlite3's native addon, the process aborts.
   */
  readonly close: () => Promise<void>
}

/**
 * Checkpoints the WAL-mode SQLite database at `path` from a worker thread with its own connection.
 * Checkpointing copies the log's pages into the database file and syncs it: done by the application's
 * connection, as SQLite does by default, that runs inside a commit every 1,000 pages and holds the event
 * loop for its whole length. The thread keeps the process alive only until its connection is open (a
 * process that ends while it loads the addon aborts); if it cannot start or fails, the application's
 * connection checkpoints at `FALLBACK_CHECKPOINT_PAGES`, and `onFailure` is told.
 */
export const startBackgroundCheckpoints = (
  path: string,
  onFailure: (message: string) => void = () => {}
): BackgroundCheckpoints => {
  const worker = new Worker(THREAD_SOURCE, {
    eval: true,
    workerData: {
      module: createRequire(import.meta.url).resolve("better-sqlite3"),
      path,
      busyEveryMs: BUSY_EVERY_MS,
      idleEveryMs: IDLE_EVERY_MS
    }
  })
  const exited = new Promise<void>((resolve) => worker.once("exit", () => resolve()))
  let closing = false
  let reported = false
  const failed = (message: string) => {
    if (reported) return
    reported = true
    onFailure(message)
  }
  worker.on("message", (message: { readonly ready?: true; readonly failed?: string }) => {
    if (message.ready && !closing) worker.unref()
    if (message.failed !== undefined) failed(message.failed)
  })
  worker.on("error", (error) => failed(error.message))
  return {
    close: () => {
      // Waited for, the thread keeps the process alive until it is gone.
      closing = true
      worker.ref()
      worker.postMessage("close")
      return exited
    }
  }
}
