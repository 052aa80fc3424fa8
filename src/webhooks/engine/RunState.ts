/**
 * What the three parts of one delivery run (feed, pump, recorder) share, each field written by one
 * part and read by the others.
 */
export interface RunState {
  /** Feed rounds so far (written by the feed). */
  rounds: number
  /**
   * For each endpoint the recorder found stopped (suspended, switched off, deleted), the feed round
   * it was in then: deliveries read with their endpoint in that round or before are not sent. Those
   * read later carry the endpoint as it is now (it may be back). Written by the recorder.
   */
  readonly stoppedIn: Map<string, number>
  /** Events fanned out plus deliveries taken from the queue, sent or not: what the run returns. */
  done: number
  /** Requests in flight, their outcome not yet handed to the recorder (written by the pump). */
  inFlight: number
}

/** A run's state before its first round. */
export const initialRunState = (): RunState => ({ rounds: 0, stoppedIn: new Map(), done: 0, inFlight: 0 })
