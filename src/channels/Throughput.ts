/**
 * How fast a chat-app number may send: the operator takes 80 messages a second from a number by
 * default (throughput level `STANDARD`) and 1,000 once it upgraded the number (`HIGH`); above that it
 * answers 130429. A host may set a channel's rate itself, which then decides.
 */

/** Sends a second at the operator's default level, and at any level not known to be higher. */
export const STANDARD_PER_SECOND = 80

/** Sends a second at the operator's upgraded level, `HIGH`. */
export const HIGH_PER_SECOND = 1_000

/** The most sends a second a host may set for a channel. */
export const MAX_HOST_PER_SECOND = 100_000

/** How far ahead of now a reservation may reach: callers queue at most a second of sends between them. */
export const MAX_AHEAD_MS = 1_000

/** The number's sends a second: the host's rate when set, else by the operator's throughput level. */
export const perSecondOf = (throughputLevel: string | null, hostPerSecond: number | null): number =>
  hostPerSecond ?? (throughputLevel?.toUpperCase() === "HIGH" ? HIGH_PER_SECOND : STANDARD_PER_SECOND)

/** How long one send slot lasts, in microseconds, rounded up so the rate is never passed. */
export const slotMicrosOf = (perSecond: number): number => Math.ceil(1_000_000 / perSecond)

/**
 * How many slots one reservation takes at most: a tenth of a second's worth, so processes sharing a
 * number interleave finely and a crashed one wastes little.
 */
export const reservationSizeOf = (perSecond: number): number => Math.max(1, Math.floor(perSecond / 10))
