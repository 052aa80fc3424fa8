// A file summary's life as pure functions (spec: "File summary status", "Limits"): what a request or
// a generation's outcome does to a summary, what it costs, whether a file may be summarized at all,
// and the request-rate windows.

/** Who asked: a POST (`on_demand`, priced) or a host's assistant (`agent`, free). */
export type SummarySource = "on_demand" | "agent"

/** What is summarized. */
export type SummaryKind = "image" | "pdf"

/** AI credits an on-demand summary costs (spec: "Summary price"). */
export const PRICES: Readonly<Record<SummaryKind, number>> = { image: 2, pdf: 3 }

/** Largest file summarized, in bytes (spec: "Summary input"): 10 MB images, 20 MB PDFs. */
export const MAX_BYTES: Readonly<Record<SummaryKind, number>> = { image: 10 * 1024 * 1024, pdf: 20 * 1024 * 1024 }

/** Pages of a PDF read (spec: "first 10 pages read"). */
export const MAX_PAGES = 10

/** Seconds a generation holds its `pending` summary; after that another request may take it over. */
export const LEASE_SECONDS = 300

/** The image types summarized; every other image (and every other file but a PDF) is not. */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/jpeg", "image/png", "image/webp", "image/gif"])

/** A summary as the machine sees it. */
export type SummaryState =
  | { readonly status: "none" }
  | {
    readonly status: "pending"
    readonly generation: number
    readonly lease_until: string
    readonly source: SummarySource
    readonly kind: SummaryKind
  }
  | { readonly status: "ok"; readonly generation: number }
  | { readonly status: "failed"; readonly generation: number }

/** What happens to a summary. */
export type SummaryEvent =
  /** A summary is asked for; `balance` is the workspace's credits (read for on-demand requests). */
  | { readonly type: "requested"; readonly source: SummarySource; readonly kind: SummaryKind; readonly balance: number }
  /** Generation `generation` produced a summary; `announce`: `attachment.summarized` is emitted (never for team chat). */
  | { readonly type: "generated"; readonly generation: number; readonly announce: boolean }
  /** Generation `generation` failed. */
  | { readonly type: "generation_failed"; readonly generation: number }

/** What the service performs. */
export type SummaryIntent =
  /** 200 with the existing summary, nothing charged. */
  | { readonly type: "answer_existing" }
  /** 202 with the pending summary, nothing charged. */
  | { readonly type: "answer_pending" }
  /** The balance is below the price: nothing is generated. */
  | { readonly type: "refuse_credits"; readonly required: number; readonly balance: number }
  /**
   * Take the summary `pending` under `generation` with a lease: a first insert (generation 1), or the
   * next generation of the one at `generation - 1` (failed, or pending with its lease run out).
   */
  | {
    readonly type: "claim"
    readonly generation: number
    readonly lease_until: string
    readonly source: SummarySource
    readonly kind: SummaryKind
  }
  /** Read the file and call the summarizer, outside any transaction. */
  | { readonly type: "generate" }
  /** Store the summary `ok`. */
  | { readonly type: "store_ok" }
  /** Write the charge of this generation to the ledger (with `store_ok`, in its transaction). */
  | { readonly type: "charge"; readonly credits: number }
  /** Emit `attachment.summarized` (with `store_ok`, in its transaction). */
  | { readonly type: "announce" }
  /** 201 (on demand) with what was charged. */
  | { readonly type: "answer_created"; readonly credits_charged: number }
  /** Store the summary `failed`, nothing charged. */
  | { readonly type: "store_failed" }
  /** 502 `summary_failed`. */
  | { readonly type: "answer_failed" }

/** The next state and what to perform. */
export interface SummaryTransition {
  readonly state: SummaryState
  readonly intents: ReadonlyArray<SummaryIntent>
}

/** What a summary of `kind` asked for by `source` costs: the price on demand, nothing for an agent. */
export const priceOf = (kind: SummaryKind, source: SummarySource): number => (source === "on_demand" ? PRICES[kind] : 0)

const addSeconds = (at: string, seconds: number): string => new Date(Date.parse(at) + seconds * 1000).toISOString()

/** True when a pending summary's lease has run out at `now` (its generator is presumed gone). */
export const leaseExpired = (lease_until: string, now: string): boolean => Date.parse(lease_until) <= Date.parse(now)

/** Whether a request now would start a generation (and so, on demand, needs the balance). */
export const wouldGenerate = (state: SummaryState, now: string): boolean =>
  state.status === "none" || state.status === "failed" || (state.status === "pending" && leaseExpired(state.lease_until, now))

/**
 * The transition of a summary (pure). A request finds: nothing, `failed` or a pending one whose lease
 * ran out → a new generation (refused, unchanged, when on demand and the balance is below the price);
 * `pending` → 202; `ok` → 200, unchanged, free. A generation's outcome counts only for the generation
 * still pending: `ok` (charged on demand, announced unless team chat, 201) or `failed` (free, 502).
 */
export const transition = (state: SummaryState, event: SummaryEvent, now: string): SummaryTransition => {
  switch (event.type) {
    case "requested": {
      if (state.status === "ok") return { state, intents: [{ type: "answer_existing" }] }
      if (!wouldGenerate(state, now)) return { state, intents: [{ type: "answer_pending" }] }
      const price = priceOf(event.kind, event.source)
      if (event.balance < price) {
        return { state, intents: [{ type: "refuse_credits", required: price, balance: event.balance }] }
      }
      const next: SummaryState = {
        status: "pending",
        generation: state.status === "none" ? 1 : state.generation + 1,
        lease_until: addSeconds(now, LEASE_SECONDS),
        source: event.source,
        kind: event.kind
      }
      return {
        state: next,
        intents: [
          { type: "claim", generation: next.generation, lease_until: next.lease_until, source: next.source, kind: next.kind },
          { type: "generate" }
        ]
      }
    }
    case "generated": {
      if (state.status !== "pending" || state.generation !== event.generation) return { state, intents: [] }
      const credits = priceOf(state.kind, state.source)
      return {
        state: { status: "ok", generation: state.generation },
        intents: [
          { type: "store_ok" },
          ...(credits > 0 ? [{ type: "charge" as const, credits }] : []),
          ...(event.announce ? [{ type: "announce" as const }] : []),
          { type: "answer_created", credits_charged: credits }
        ]
      }
    }
    case "generation_failed": {
      if (state.status !== "pending" || state.generation !== event.generation) return { state, intents: [] }
      return {
        state: { status: "failed", generation: state.generation },
        intents: [{ type: "store_failed" }, { type: "answer_failed" }]
      }
    }
  }
}

/** What a file is, for summaries: where it came from, its checked type and size. */
export interface SummaryCandidate {
  readonly contentType: string
  readonly fileSize: number
  /** Sent to the workspace: by a contact, or in team chat by someone else than the caller. */
  readonly inbound: boolean
  /** Whether the place it is in offers summaries (not an inline email image, not a shared or guest channel). */
  readonly offered: boolean
}

/** Whether a file can be summarized: its kind, or why not (the 422's message). */
export type Summarizable =
  | { readonly summarizable: true; readonly kind: SummaryKind }
  | { readonly summarizable: false; readonly reason: string }

const MB = 1024 * 1024

/**
 * Whether a file can be summarized (spec: "Summary input"): offered where it is, inbound, a supported
 * image up to 10 MB or a PDF up to 20 MB.
 */
export const summarizable = (file: SummaryCandidate): Summarizable => {
  if (!file.offered) return { summarizable: false, reason: "Summaries are not offered for this file here" }
  if (!file.inbound) return { summarizable: false, reason: "Only files sent to the workspace can be summarized" }
  const type = file.contentType.split(";")[0]!.trim().toLowerCase()
  const kind: SummaryKind | null = type === "application/pdf" ? "pdf" : IMAGE_TYPES.has(type) ? "image" : null
  if (kind === null) {
    return { summarizable: false, reason: `Only images (JPEG, PNG, WebP, GIF) and PDFs can be summarized, not ${type}` }
  }
  if (file.fileSize > MAX_BYTES[kind]) {
    return {
      summarizable: false,
      reason: `File too large to summarize: ${kind === "pdf" ? "PDFs" : "images"} up to ${MAX_BYTES[kind] / MB} MB`
    }
  }
  return { summarizable: true, kind }
}

/**
 * `ai_summary_available` and `ai_summary_credits` (spec: "Message attachment"): available when AI
 * features are on, the file can be summarized and no summary is `ok` or `pending` (a `failed` one may
 * be requested again); the price when available, else null.
 */
export const availability = (
  aiEnabled: boolean,
  file: SummaryCandidate,
  status: "ok" | "pending" | "failed" | null
): { readonly ai_summary_available: boolean; readonly ai_summary_credits: number | null } => {
  const checked = summarizable(file)
  const available = aiEnabled && checked.summarizable && status !== "ok" && status !== "pending"
  return {
    ai_summary_available: available,
    ai_summary_credits: available && checked.summarizable ? PRICES[checked.kind] : null
  }
}

/** The request rates of the spec's "Summary request rate": per user or API key, per workspace, per window. */
export const RATE_LIMITS = { perCaller: 30, perWorkspace: 60, windowSeconds: 60 } as const

/** The fixed window `now` falls in: its start (a timestamp) and the whole seconds until its end (at least 1). */
export const rateWindow = (nowMs: number): { readonly start: string; readonly retryAfterSeconds: number } => {
  const length = RATE_LIMITS.windowSeconds * 1000
  const start = Math.floor(nowMs / length) * length
  return { start: new Date(start).toISOString(), retryAfterSeconds: Math.max(1, Math.ceil((start + length - nowMs) / 1000)) }
}

/** Counter key of a caller (an API key's or a user's id); the workspace's is `workspace`. */
export const callerKey = (caller: { readonly kind: "api_key" | "user"; readonly id: string }): string =>
  `${caller.kind}:${caller.id}`

/** The counters a request is taken from, caller's first: a caller over its limit never uses up the workspace's. */
export const rateBuckets = (caller: { readonly kind: "api_key" | "user"; readonly id: string }) =>
  [
    { key: callerKey(caller), limit: RATE_LIMITS.perCaller },
    { key: "workspace", limit: RATE_LIMITS.perWorkspace }
  ] as const

/** What a full bucket (or none) means for the request: allowed, or refused with the limit and `Retry-After`. */
export const rateDecision = (
  fullBucket: string | null,
  nowMs: number
):
  | { readonly allowed: true }
  | { readonly allowed: false; readonly scope: "caller" | "workspace"; readonly limit: number; readonly retryAfter: number } =>
{
  if (fullBucket === null) return { allowed: true }
  const scope = fullBucket === "workspace" ? "workspace" : "caller"
  return {
    allowed: false,
    scope,
    limit: scope === "workspace" ? RATE_LIMITS.perWorkspace : RATE_LIMITS.perCaller,
    retryAfter: rateWindow(nowMs).retryAfterSeconds
  }
}
