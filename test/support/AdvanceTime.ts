import type fc from "fast-check"

/**
 * The model-based tests' shared time command: moves the model's and the system's clocks by the
 * same milliseconds, then checks they still agree.
 */
export const makeAdvanceTime = <M extends { now: number }, R extends { now: number }>(agree: (m: M, r: R) => void) =>
  class AdvanceTimeCommand implements fc.Command<M, R> {
    constructor(readonly ms: number) {}
    check = () => true
    run(m: M, r: R) {
      m.now += this.ms
      r.now += this.ms
      agree(m, r)
    }
    toString = () => `AdvanceTime(${this.ms})`
  }
