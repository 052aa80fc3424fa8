// A flow session's life as pure functions (spec: "Flow session", "States and transitions → Flow
// session"): reading the contact's answer out of the operator's message, masking sensitive inputs,
// what an answer does to a session, and the status a session reads as at a given time.
import type { FlowScreen, FlowSessionRecord } from "../ports/FlowStore.ts"

/** What a sensitive input's value becomes before it is stored or leaves the service: four U+2022. */
export const MASK = "\u2022\u2022\u2022\u2022"

const asRecord = (value: unknown): Readonly<Record<string, unknown>> | null =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null

/**
 * Reads an inbound chat-app message (the operator's JSON object): for type interactive with
 * interactive.type "nfm_reply", the parsed response_json (a JSON string) — its flow_token and the
 * other keys as answers; null for anything else or unparsable JSON.
 *
 * A response without a non-empty string `flow_token`, or whose JSON is not an object, is null too:
 * it cannot be matched to a session.
 */
export const readFlowReply = (
  message: Readonly<Record<string, unknown>>
): { readonly flowToken: string; readonly answers: Readonly<Record<string, unknown>> } | null => {
  if (message.type !== "interactive") return null
  const interactive = asRecord(message.interactive)
  if (interactive === null || interactive.type !== "nfm_reply") return null
  const responseJson = asRecord(interactive.nfm_reply)?.response_json
  if (typeof responseJson !== "string") return null
  let parsed: unknown
  try {
    parsed = JSON.parse(responseJson)
  } catch {
    return null
  }
  const response = asRecord(parsed)
  if (response === null) return null
  const flowToken = response.flow_token
  if (typeof flowToken !== "string" || flowToken.length === 0) return null
  // fromEntries defines own properties, so a key such as `__proto__` stays an answer like any other.
  const answers = Object.fromEntries(Object.entries(response).filter(([name]) => name !== "flow_token"))
  return { flowToken, answers }
}

/** The names of the inputs on any screen's sensitive list. */
export const sensitiveInputs = (screens: ReadonlyArray<FlowScreen>): ReadonlySet<string> =>
  new Set(screens.flatMap((screen) => screen.sensitive_fields))

/** Input name → component type (`TextInput`, `OptIn`, `PhotoPicker`, …), over every screen. */
export const inputTypesOf = (screens: ReadonlyArray<FlowScreen>): ReadonlyMap<string, string> =>
  new Map(screens.flatMap((screen) => screen.inputs.map((input) => [input.name, input.type] as const)))

/**
 * The answers with sensitive inputs masked (every screen's sensitive_fields). Unmapped and unknown
 * inputs are kept. A sensitive input's whole value is replaced, whatever its type (media included).
 */
export const maskAnswers = (
  answers: Readonly<Record<string, unknown>>,
  screens: ReadonlyArray<FlowScreen>
): Readonly<Record<string, unknown>> => {
  const sensitive = sensitiveInputs(screens)
  return Object.fromEntries(
    Object.entries(answers).map(([name, value]) => [name, sensitive.has(name) ? MASK : value])
  )
}

/** Something that happens to a session: an answer arriving at a time. */
export type SessionEvent = { readonly kind: "answer"; readonly at: string }

/** What an answer does to a session. */
export type SessionDecision =
  | { readonly kind: "complete" }
  | { readonly kind: "ignore"; readonly reason: "already_completed" | "not_open" }

const COMPLETE: SessionDecision = { kind: "complete" }
const ALREADY_COMPLETED: SessionDecision = { kind: "ignore", reason: "already_completed" }
const NOT_OPEN: SessionDecision = { kind: "ignore", reason: "not_open" }

/**
 * What an answer does to a session (pure), given its status, stored or effective: a `sent` session
 * completes, an `expired` one too (the contact's answer is never lost, write-back runs as usual); a
 * `completed` session stays as it is (a redelivered answer); any other (`failed`, …) is not open.
 */
export const decideAnswer = (status: string): SessionDecision => {
  switch (status) {
    case "sent":
    case "expired":
      return COMPLETE
    case "completed":
      return ALREADY_COMPLETED
    default:
      return NOT_OPEN
  }
}

/**
 * `expired` for a `sent` session past expires_at (strictly after it: at the instant itself the
 * session is still `sent`), else its stored status.
 */
export const effectiveStatus = (
  session: Pick<FlowSessionRecord, "status" | "expires_at">,
  now: string
): string => session.status === "sent" && Date.parse(now) > Date.parse(session.expires_at) ? "expired" : session.status
