import { createHmac, createSecretKey, type KeyObject } from "node:crypto"
import { mulberry32 } from "../test/support/Mulberry32.ts"

/** The chat-app channel every payload of the inbound benchmark is routed to (`metadata.phone_number_id`). */
export const PHONE_NUMBER_ID = "1234567"
/** The channel's business account (`entry[].id`). */
export const BUSINESS_ACCOUNT_ID = "7654321"

/** One operator webhook as the operator sends it: the raw body and its `X-Hub-Signature-256`. */
export interface SignedPayload {
  readonly body: string
  readonly signature: string
  /** Messages in the payload. */
  readonly messages: number
}

/** The digits of contact `n` (`wa_id`, `from`): 11 digits, so `+1555…` is a plausible number. */
export const waIdOf = (contact: number): string => `1555${String(contact).padStart(7, "0")}`

/** Signs `body` as the operator signs: HMAC-SHA256 of the raw body with the app secret, in hex. */
const signer = (secret: string) => {
  const key: KeyObject = createSecretKey(Buffer.from(secret, "utf8"))
  return (body: string, messages: number): SignedPayload => ({
    body,
    signature: `sha256=${createHmac("sha256", key).update(body).digest("hex")}`,
    messages
  })
}

/** The envelope every operator payload comes in: one entry of the business account holding `changes`. */
const envelope = (changes: ReadonlyArray<Readonly<Record<string, unknown>>>): string =>
  JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: BUSINESS_ACCOUNT_ID, changes }] })

/** The `value` fields every change of the chat-app number carries. */
const numberMetadata = {
  messaging_product: "whatsapp",
  metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID }
}

/** A change with contacts' messages, and the senders' profiles as the operator sends them. */
const messagesChange = (items: ReadonlyArray<{ readonly contact: number; readonly message: unknown }>) => ({
  field: "messages",
  value: {
    ...numberMetadata,
    contacts: [...new Set(items.map(({ contact }) => contact))].map((contact) => ({ profile: { name: `Contact ${contact}` }, wa_id: waIdOf(contact) })),
    messages: items.map((item) => item.message)
  }
})

/**
 * Makes distinct signed payloads in the operator's real shape: every message has its own wamid
 * (`wamid.<run>.<n>`), and senders cycle through `contacts` phone numbers so conversations are
 * reused. Signed with the app secret as the operator signs: HMAC-SHA256 of the raw body, in hex.
 */
export const makePayloads = (options: { readonly secret: string; readonly run: string; readonly contacts: number }) => {
  const signed = signer(options.secret)
  const timestamp = String(Math.floor(Date.now() / 1000))
  let next = 0
  const message = () => {
    const n = next++
    const contact = n % options.contacts
    return {
      contact,
      message: {
        from: waIdOf(contact),
        id: `wamid.${options.run}.${n}`,
        timestamp,
        type: "text",
        text: { body: `hola ${n}` }
      }
    }
  }
  /** A payload of `size` messages in one change, with the senders' profiles, as the operator batches them. */
  const payload = (size = 1): SignedPayload => signed(envelope([messagesChange(Array.from({ length: size }, message))]), size)
  return {
    payload,
    /** `count` single-message payloads, signed up front so signing is not timed. */
    many: (count: number): Array<SignedPayload> => Array.from({ length: count }, () => payload(1))
  }
}

/** A message the host sent earlier, whose statuses the mix carries: stored `sent` before processing starts. */
export interface OutboundMessage {
  /** Its wamid, as the operator answered the send. */
  readonly externalId: string
  /** The contact it went to (see `waIdOf`). */
  readonly contact: number
  /** When it was sent, epoch ms: the time of its `sent` status. */
  readonly sentAt: number
}

/** The operator's traffic for the processing phase, and the outbound messages its statuses are about. */
export interface Mix {
  readonly payloads: ReadonlyArray<SignedPayload>
  readonly outbound: ReadonlyArray<OutboundMessage>
  /** Contacts' messages in all the payloads. */
  readonly messages: number
  /** Statuses in all the payloads: three per outbound message. */
  readonly statuses: number
}

const STATUS_NAMES = ["sent", "delivered", "read"] as const

/** One item of the mix: contact message `n`, or status `status` (an index of `STATUS_NAMES`) of outbound message `n`. */
type MixItem =
  | { readonly kind: "message"; readonly n: number }
  | { readonly kind: "status"; readonly n: number; readonly status: 0 | 1 | 2 }

/**
 * What a host that answers its contacts receives: for every contact's message, the three statuses
 * (sent, delivered, read) of a message the host sent to that contact. Message `n` comes from contact
 * `n % contacts` and outbound message `n` went to the same contact. At step `n` come message `n` and
 * the `sent` of outbound `n`; its `delivered` comes 0 to 3 steps later and its `read` 0 to 20 steps
 * after that, so a message's statuses keep their order (sent → delivered → read) while being spread
 * over payloads and interleaved with other traffic. The stream is cut into payloads of 1 to 10 items;
 * within a payload each run of messages or of statuses is one change, in the stream's order, so one
 * worker meets the items in that order. Lags and sizes come from `seed`: the same seed, the same mix.
 */
export const makeMix = (options: {
  readonly secret: string
  readonly run: string
  readonly contacts: number
  readonly messages: number
  readonly seed: number
}): Mix => {
  const signed = signer(options.secret)
  const random = mulberry32(options.seed)
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1))
  const base = Math.floor(Date.now() / 1000)
  const count = options.messages
  const contactOf = (n: number) => n % options.contacts
  const outboundId = (n: number) => `wamid.${options.run}.out.${n}`

  // What is due at each step; an outbound message's statuses are added together, in order, and the
  // steps they land on never go back, so each step keeps them in order too.
  const steps: Array<Array<MixItem>> = Array.from({ length: count }, () => [])
  const at = (step: number) => steps[Math.min(step, count - 1)]!
  for (let n = 0; n < count; n++) {
    const delivered = n + between(0, 3)
    const read = delivered + between(0, 20)
    at(n).push({ kind: "message", n }, { kind: "status", n, status: 0 })
    at(delivered).push({ kind: "status", n, status: 1 })
    at(read).push({ kind: "status", n, status: 2 })
  }

  const message = (n: number) => ({
    contact: contactOf(n),
    message: { from: waIdOf(contactOf(n)), id: `wamid.${options.run}.${n}`, timestamp: String(base), type: "text", text: { body: `hola ${n}` } }
  })
  // As the operator reports them: the conversation and pricing come with `sent` and `delivered`.
  const status = (n: number, index: 0 | 1 | 2) => ({
    id: outboundId(n),
    status: STATUS_NAMES[index],
    timestamp: String(base + index),
    recipient_id: waIdOf(contactOf(n)),
    ...(index === 2 ? {} : {
      conversation: {
        id: contactOf(n).toString(16).padStart(32, "0"),
        ...(index === 0 ? { expiration_timestamp: String(base + 86_400) } : {}),
        origin: { type: "service" }
      },
      pricing: { billable: true, pricing_model: "CBP", category: "service" }
    })
  })
  const payloadOf = (items: ReadonlyArray<MixItem>): SignedPayload => {
    const changes: Array<Readonly<Record<string, unknown>>> = []
    for (let start = 0; start < items.length;) {
      const kind = items[start]!.kind
      let end = start
      while (end < items.length && items[end]!.kind === kind) end++
      const run = items.slice(start, end)
      changes.push(
        kind === "message"
          ? messagesChange(run.map((item) => message(item.n)))
          : { field: "messages", value: { ...numberMetadata, statuses: run.map((item) => status(item.n, (item as Extract<MixItem, { kind: "status" }>).status)) } }
      )
      start = end
    }
    return signed(envelope(changes), items.filter((item) => item.kind === "message").length)
  }

  const stream = steps.flat()
  const payloads: Array<SignedPayload> = []
  for (let start = 0; start < stream.length;) {
    const size = between(1, 10)
    payloads.push(payloadOf(stream.slice(start, start + size)))
    start += size
  }
  return {
    payloads,
    outbound: Array.from({ length: count }, (_, n) => ({ externalId: outboundId(n), contact: contactOf(n), sentAt: base * 1000 })),
    messages: count,
    statuses: 3 * count
  }
}
