import { setTimeout as sleep } from "node:timers/promises"
import type { Workers } from "omnichannel-core"

/**
 * For the manual test clock: starts `count` loops that each run due work and, when none was found,
 * wait `idleMs` (real time: the test clock moves "now", not the poll interval) before looking
 * again. `stop` waits for the current round to finish; each round beats (`heartbeats`).
 */
export const startWorkers = (
  count: number,
  drain: () => Promise<number>,
  options: { readonly idleMs: number; readonly onError: (error: unknown) => void }
): Workers => {
  const controller = new AbortController()
  const beats = new Map<string, number>()
  const loop = async (_: unknown, worker: number) => {
    while (!controller.signal.aborted) {
      beats.set(`drain#${worker}`, Date.now())
      let done = 0
      try {
        done = await drain()
      } catch (error) {
        options.onError(error)
      }
      if (done === 0) await sleep(options.idleMs, undefined, { signal: controller.signal }).catch(() => undefined)
    }
  }
  const loops = Array.from({ length: count }, loop)
  return {
    stop: async () => {
      controller.abort()
      await Promise.all(loops)
    },
    heartbeats: () => beats
  }
}
