import { setTimeout as sleep } from "node:timers/promises"

/** Polls `done` every `every` ms for at most `ms`; resolves with whether it became true. */
export const eventually = async (ms: number, done: () => boolean | Promise<boolean>, every = 100): Promise<boolean> => {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await done()) return true
    await sleep(every)
  }
  return done()
}

/** Polls `done` every 10 ms until it holds; fails naming `what` after `ms`. */
export const waitUntil = async (what: string, done: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> => {
  if (!(await eventually(ms, done, 10))) throw new Error(`gave up waiting until ${what}`)
}
