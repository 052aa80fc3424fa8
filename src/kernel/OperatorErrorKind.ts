import { Schema } from "effect"

/**
 * The closed set of ways the chat-app operator can refuse a request or fail a message, read from its
 * error object's `code` (on a refused call, or in a `failed` status webhook): `rate_limited` (4, 17,
 * 32, 80007, 130429: the number or the app sends too fast), `pair_rate_limited` (131056: too many
 * messages to one recipient; the others can go on), `transient` (1, 2, 131000, 131016, 131057, or
 * `is_transient`), `auth` (0, 190, 10, 200–299), `policy` (368, 131031), `quality_restricted`
 * (131048: the number is restricted for its quality or for spam), `opted_out` (131050: the recipient
 * stopped marketing messages), `template` (132000–132016), and `other` (anything else). Areas decide
 * on the kind and never compare the operator's codes.
 */
export const OperatorErrorKind = Schema.Literals([
  "rate_limited",
  "pair_rate_limited",
  "transient",
  "auth",
  "policy",
  "quality_restricted",
  "opted_out",
  "template",
  "other"
])
/** The closed set of ways the operator can refuse a request or fail a message. */
export type OperatorErrorKind = typeof OperatorErrorKind.Type

const RATE_LIMITED = new Set([4, 17, 32, 80007, 130429])
const PAIR_RATE_LIMITED = 131056
const TRANSIENT = new Set([1, 2, 131000, 131016, 131057])
const POLICY = new Set([368, 131031])
const QUALITY_RESTRICTED = 131048
const OPTED_OUT = 131050

/**
 * The kind of the operator's error `code`. A known code decides; `isTransient` only turns an
 * otherwise unknown code into `transient`, so a rate limit stays a rate limit and a dead token stays
 * `auth` whatever the flag says. The subcode refines none of the listed codes today; it is taken so
 * every caller hands over the whole triple and a refinement would land here alone.
 */
export const operatorErrorKindOf = (code: number | null, _subcode: number | null, isTransient: boolean): OperatorErrorKind => {
  if (code !== null) {
    if (RATE_LIMITED.has(code)) return "rate_limited"
    if (code === PAIR_RATE_LIMITED) return "pair_rate_limited"
    if (TRANSIENT.has(code)) return "transient"
    if (code === 0 || code === 190 || code === 10 || (code >= 200 && code <= 299)) return "auth"
    if (POLICY.has(code)) return "policy"
    if (code === QUALITY_RESTRICTED) return "quality_restricted"
    if (code === OPTED_OUT) return "opted_out"
    if (code >= 132000 && code <= 132016) return "template"
  }
  return isTransient ? "transient" : "other"
}

/** Whether the same request may succeed later: a rate limit (of the number or of one recipient) or a brief failure. */
export const isRetryableKind = (kind: OperatorErrorKind): boolean =>
  kind === "rate_limited" || kind === "pair_rate_limited" || kind === "transient"

/** Whether the operator is holding sends back for speed (the number's rate or one recipient's): try again later. */
export const isRateLimitKind = (kind: OperatorErrorKind): boolean => kind === "rate_limited" || kind === "pair_rate_limited"
