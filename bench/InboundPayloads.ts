import { createHmac, createSecretKey, type KeyObject } from "node:crypto"

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
const waIdOf = (contact: number) => `1555${String(contact).padStart(7, "0")}`

/**
 * Makes distinct signed payloads in the operator's real shape: every message has its own wamid
 * (`wamid.<run>.<n>`), and senders cycle through `contacts` phone numbers so conversations are
 * reused. Signed with the app secret as the operator signs: HMAC-SHA256 of the raw body, in hex.
 */
export const makePayloads = (options: { readonly secret: string; readonly run: string; readonly contacts: number }) => {
  const key: KeyObject = createSecretKey(Buffer.from(options.secret, "utf8"))
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
  const signed = (body: string, messages: number): SignedPayload => ({
    body,
    signature: `sha256=${createHmac("sha256", key).update(body).digest("hex")}`,
    messages
  })
  /** A payload of `size` messages in one change, with the senders' profiles, as the operator batches them. */
  const payload = (size = 1): SignedPayload => {
    const items = Array.from({ length: size }, message)
    const contacts = [...new Map(items.map(({ contact }) => [contact, contact])).values()]
      .map((contact) => ({ profile: { name: `Contact ${contact}` }, wa_id: waIdOf(contact) }))
    const body = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [{
        id: BUSINESS_ACCOUNT_ID,
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: PHONE_NUMBER_ID },
            contacts,
            messages: items.map((item) => item.message)
          }
        }]
      }]
    })
    return signed(body, size)
  }
  return {
    payload,
    /** `count` single-message payloads, signed up front so signing is not timed. */
    many: (count: number): Array<SignedPayload> => Array.from({ length: count }, () => payload(1))
  }
}
