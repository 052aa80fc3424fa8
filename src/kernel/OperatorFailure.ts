import { OperatorFailed } from "./ApiError.ts"
import { isRateLimitKind, type OperatorErrorKind } from "./OperatorErrorKind.ts"

/** What an area knows of an operator refusal: the fields of the `ChatPlatformError` port error. */
export interface OperatorRefusal {
  readonly kind: OperatorErrorKind
  readonly code: number | null
  readonly subcode: number | null
  readonly message: string
  readonly userTitle: string | null
  readonly userMessage: string | null
  readonly fbtraceId: string | null
}

/** The operator's side of a failure as the API shows it (`detail.operator`). */
export const operatorDetail = (error: OperatorRefusal) => ({
  kind: error.kind,
  code: error.code,
  subcode: error.subcode,
  title: error.userTitle,
  message: error.userMessage ?? error.message,
  fbtrace_id: error.fbtraceId
})

/**
 * How a send whose request left and got no answer is answered (a timeout, a connection dropped after
 * the request was sent): 504 `operator_no_answer`. The operator may have the message, so it is neither
 * failed nor to be sent again: it stays `pending` (`messageId`) until the operator's status settles it.
 */
export const operatorNoAnswer = (error: OperatorRefusal, messageId: string): OperatorFailed =>
  new OperatorFailed({
    message_id: messageId,
    status: 504,
    code: "operator_no_answer",
    message: "The chat-app operator gave no answer, so the message may have been sent; it stays pending until the " +
      "operator reports its status (message.sent, then its status events). Do not send it again.",
    operator: operatorDetail(error)
  })

/**
 * How an operator refusal is answered: 429 when it rate-limits (the number, or messages to this one
 * recipient), 503 when it is briefly failing, 422 when the recipient stopped marketing messages
 * (retrying changes nothing, the request is the problem), 502 otherwise (`operator_{kind}`).
 * `messageId` names the message stored as failed, when there is one.
 */
export const operatorFailure = (error: OperatorRefusal, messageId?: string): OperatorFailed => {
  const status = isRateLimitKind(error.kind) ? 429 : error.kind === "transient" ? 503 : error.kind === "opted_out" ? 422 : 502
  const code = isRateLimitKind(error.kind)
    ? "operator_rate_limited"
    : error.kind === "transient"
    ? "operator_unavailable"
    : error.kind === "opted_out"
    ? "recipient_opted_out"
    : `operator_${error.kind}`
  const message = error.kind === "rate_limited"
    ? "The chat-app operator is rate-limiting this number; try again later"
    : error.kind === "pair_rate_limited"
    ? "The chat-app operator is limiting messages to this recipient; try again later"
    : error.kind === "transient"
    ? "The chat-app operator is briefly unavailable; try again shortly"
    : error.kind === "opted_out"
    ? "The recipient has stopped marketing messages from this business (operator code 131050); the message was not delivered"
    : `The chat-app operator refused the request: ${error.userMessage ?? error.message}`
  return new OperatorFailed({
    ...(messageId === undefined ? {} : { message_id: messageId }),
    status,
    code,
    message,
    operator: operatorDetail(error)
  })
}
