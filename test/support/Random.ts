import { beforeEach } from "vitest"
import { mulberry32 } from "./Mulberry32.ts"

/** A test file's random numbers, and the seed that gives them again. */
export interface SeededRandom {
  /** What `TEST_SEED` replays this file's run with. */
  readonly seed: number
  /** Uniform on [0, 1). */
  readonly next: () => number
  /** A whole number from `min` to `max`, both included. */
  readonly int: (min: number, max: number) => number
  /** A whole number from 0 to 2^32 - 1: the seed of a generator elsewhere (a child process). */
  readonly seed32: () => number
}

/** `TEST_SEED` when it is set, or a seed drawn now; an unreadable `TEST_SEED` is an error, not ignored. */
const seedOfRun = (): number => {
  const given = process.env.TEST_SEED
  if (given === undefined || given === "") return Math.floor(Math.random() * 2 ** 32)
  if (!/^\d+$/.test(given) || Number(given) >= 2 ** 32) throw new Error(`TEST_SEED must be a whole number from 0 to 4294967295, got ${JSON.stringify(given)}`)
  return Number(given)
}

/**
 * The random numbers of the calling test file, seeded by `TEST_SEED` when set, else by a seed drawn
 * once for the file. Call it once at the top of the file: the failure message of every test of the
 * file that fails then ends with the seed and the command that runs the file again with the same
 * numbers (the whole file: its tests draw from one sequence, in order).
 */
export const seededRandom = (): SeededRandom => {
  const seed = seedOfRun()
  const next = mulberry32(seed)
  beforeEach(({ onTestFailed, task }) => {
    onTestFailed(() => {
      const replay = `TEST_SEED=${seed} replays this run: TEST_SEED=${seed} npx vitest run ${task.file.name}`
      const errors = task.result?.errors ?? []
      for (const error of errors) error.message = `${error.message}\n${replay}`
      if (errors.length === 0) console.error(`${task.name}: ${replay}`)
    })
  })
  return {
    seed,
    next,
    int: (min, max) => min + Math.floor(next() * (max - min + 1)),
    seed32: () => Math.floor(next() * 2 ** 32)
  }
}
