/** How long a copy of a library answer is served without asking the operator: 12 hours (the spec's Limits). */
export const LIBRARY_FRESH_MS = 12 * 60 * 60 * 1000

/** How long a copy may stand in when the operator is rate-limiting or unreachable: 14 days. */
export const LIBRARY_FALLBACK_MS = 14 * 24 * 60 * 60 * 1000

/**
 * After a failed refresh, how long a stale copy is served without asking the operator again: a
 * rate-limited operator is not asked on every browse.
 */
export const LIBRARY_RETRY_AFTER_MS = 60 * 1000

/**
 * What a copy fetched at `fetchedAtMs` is good for at `nowMs`: `fresh` (served as it is) until it is
 * 12 hours old, then `fallback` (read again; served with `stale: true` only if the operator cannot
 * answer) until it is 14 days old, then `expired` (never served). A copy from the future (another
 * process's clock ahead) counts as fresh.
 */
export const copyAge = (fetchedAtMs: number, nowMs: number): "fresh" | "fallback" | "expired" => {
  const age = nowMs - fetchedAtMs
  if (age < LIBRARY_FRESH_MS) return "fresh"
  if (age < LIBRARY_FALLBACK_MS) return "fallback"
  return "expired"
}

/** The hint of a stale answer: why the copy is served and how old it is. */
export const staleWarning = (reason: "rate_limited" | "unavailable", fetchedAt: string, nowMs: number): string => {
  const hours = Math.max(0, Math.floor((nowMs - Date.parse(fetchedAt)) / 3_600_000))
  const age = hours < 48 ? `${hours} hour${hours === 1 ? "" : "s"}` : `${Math.floor(hours / 24)} days`
  const why = reason === "rate_limited" ? "the operator is rate-limiting requests" : "the operator cannot be reached"
  return `The template library could not be refreshed because ${why}; this is a copy fetched at ${fetchedAt} (${age} old). Try again later for the current catalog.`
}
