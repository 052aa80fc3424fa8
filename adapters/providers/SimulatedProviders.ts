import { Effect } from "effect"
import {
  type ChannelProvider,
  type ProviderConnection,
  type ProviderField,
  ProviderRejected
} from "../../src/ports/ChannelProviders.ts"

type Input = Readonly<Record<string, string>>

interface FieldRule extends ProviderField {
  /** A check returning what is wrong, or undefined when the value is fine. */
  readonly check?: (value: string) => string | undefined
}

const pattern = (re: RegExp, message: string) => (value: string) => (re.test(value) ? undefined : message)
const E164 = pattern(/^\+[1-9]\d{6,14}$/, "Use the E.164 form, e.g. +14155550100")
const DIGITS = pattern(/^\d{5,20}$/, "Digits only, as the provider shows it")
const HOST = pattern(/^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+$/i, "A host name such as imap.example.com")
const PORT = (value: string) => {
  const n = Number(value)
  return Number.isInteger(n) && n >= 1 && n <= 65535 ? undefined : "A port from 1 to 65535"
}
const EMAIL = pattern(/^[^\s@]+@[^\s@.]+(\.[^\s@.]+)+$/, "An email address")
const LONG_SECRET = pattern(/^\S{20,512}$/, "At least 20 characters, no spaces")

/**
 * A provider that checks its inputs as the real one would check their format, then connects.
 * Standing in for the real provider's credential check, a secret containing `REJECT` is refused,
 * so the refusal path can be exercised.
 */
const simulated = (
  fields: ReadonlyArray<FieldRule>,
  connection: (input: Input) => Omit<ProviderConnection, "secrets">
): ChannelProvider => ({
  fields: fields.map(({ check: _check, ...field }) => field),
  connect: (raw) =>
    Effect.gen(function*() {
      const input: Record<string, string> = {}
      const errors: Record<string, string> = {}
      for (const field of fields) {
        const value = (raw[field.name] ?? "").trim()
        if (value === "") {
          if (field.required) errors[field.name] = "Required"
          continue
        }
        const problem = field.check?.(value)
        if (problem !== undefined) errors[field.name] = problem
        input[field.name] = value
      }
      if (Object.keys(errors).length > 0) {
        return yield* new ProviderRejected({ message: "Some details need fixing.", fields: errors })
      }
      const refused = fields.find((f) => f.secret && (input[f.name] ?? "").includes("REJECT"))
      if (refused !== undefined) {
        return yield* new ProviderRejected({
          message: "The provider refused these credentials.",
          fields: { [refused.name]: "Refused by the provider: check it and try again" }
        })
      }
      const secrets = Object.fromEntries(fields.filter((f) => f.secret && input[f.name] !== undefined)
        .map((f) => [f.name, input[f.name]!]))
      return { ...connection(input), secrets }
    })
})

const text = (name: string, label: string, check?: FieldRule["check"], hint?: string): FieldRule => ({
  name,
  label,
  secret: false,
  required: true,
  ...(check === undefined ? {} : { check }),
  ...(hint === undefined ? {} : { hint })
})
const secret = (name: string, label: string, check?: FieldRule["check"], hint?: string): FieldRule => ({
  ...text(name, label, check, hint),
  secret: true
})
const optional = (field: FieldRule): FieldRule => ({ ...field, required: false })

/** A simulated provider for each of the ten channel types, asking for what that kind of channel needs. */
export const simulatedProviders: Readonly<Record<string, ChannelProvider>> = {
  botchat: simulated(
    [secret("bot_token", "Bot token", pattern(/^\d{5,15}:[A-Za-z0-9_-]{30,60}$/, "Looks like 123456789:AA…"), "From the bot platform's bot settings, e.g. 123456789:AAH…")],
    (input) => {
      const botId = input.bot_token!.split(":")[0]!
      return { external_id: botId, name: `Bot ${botId}`, config: { bot_id: botId } }
    }
  ),
  chatapp: simulated(
    [
      text("phone_number_id", "Phone number ID", DIGITS),
      text("business_account_id", "Business account ID", DIGITS),
      secret("access_token", "Access token (system user)", LONG_SECRET)
    ],
    (input) => ({
      external_id: input.phone_number_id!,
      name: `Chat app number ${input.phone_number_id}`,
      config: { phone_number_id: input.phone_number_id!, business_account_id: input.business_account_id! }
    })
  ),
  photosocial: simulated(
    [text("account_id", "Professional account ID", DIGITS), secret("access_token", "Access token", LONG_SECRET)],
    (input) => ({ external_id: input.account_id!, name: `Photo account ${input.account_id}`, config: { account_id: input.account_id! } })
  ),
  socialmsg: simulated(
    [text("page_id", "Page ID", DIGITS), secret("page_access_token", "Page access token", LONG_SECRET)],
    (input) => ({ external_id: input.page_id!, name: `Page ${input.page_id}`, config: { page_id: input.page_id! } })
  ),
  webmail: simulated(
    [text("email_address", "Email address", EMAIL), secret("app_password", "App password", pattern(/^[a-z]{16}$/i, "16 letters, as the mail provider shows it"))],
    (input) => ({ external_id: input.email_address!.toLowerCase(), name: input.email_address!.toLowerCase(), config: { email_address: input.email_address!.toLowerCase() } })
  ),
  smtp_imap: simulated(
    [
      text("email_address", "Email address", EMAIL),
      text("imap_host", "IMAP host", HOST),
      text("imap_port", "IMAP port", PORT, "Usually 993"),
      text("smtp_host", "SMTP host", HOST),
      text("smtp_port", "SMTP port", PORT, "Usually 587 or 465"),
      text("username", "User name"),
      secret("password", "Password")
    ],
    (input) => ({
      external_id: input.email_address!.toLowerCase(),
      name: input.email_address!.toLowerCase(),
      config: {
        email_address: input.email_address!.toLowerCase(),
        imap_host: input.imap_host!,
        imap_port: input.imap_port!,
        smtp_host: input.smtp_host!,
        smtp_port: input.smtp_port!,
        username: input.username!
      }
    })
  ),
  relay_a_byok: simulated(
    [
      text("account_sid", "Account SID", pattern(/^AC[0-9a-f]{32}$/, "AC followed by 32 hexadecimal characters")),
      secret("auth_token", "Auth token", pattern(/^[0-9a-f]{32}$/, "32 hexadecimal characters")),
      text("phone_number", "Sending number", E164)
    ],
    (input) => ({ external_id: input.phone_number!, name: `SMS ${input.phone_number}`, config: { account_sid: input.account_sid!, phone_number: input.phone_number! } })
  ),
  relay_b_byok: simulated(
    [
      text("api_key", "API key", pattern(/^[0-9a-f]{8}$/, "8 hexadecimal characters")),
      secret("api_secret", "API secret", pattern(/^\S{16,64}$/, "16 to 64 characters, no spaces")),
      text("phone_number", "Sending number", E164)
    ],
    (input) => ({ external_id: input.phone_number!, name: `SMS ${input.phone_number}`, config: { api_key: input.api_key!, phone_number: input.phone_number! } })
  ),
  relay_a_managed: simulated(
    [text("business_name", "Business name"), text("phone_number", "Number to use", E164)],
    (input) => ({ external_id: input.phone_number!, name: `SMS ${input.phone_number} (managed)`, config: { business_name: input.business_name!, phone_number: input.phone_number! } })
  ),
  sms: simulated(
    [text("phone_number", "Sending number", E164), optional(text("sender_id", "Sender ID", pattern(/^[A-Za-z0-9]{3,11}$/, "3 to 11 letters or digits")))],
    (input) => ({
      external_id: input.phone_number!,
      name: `SMS ${input.phone_number}`,
      config: { phone_number: input.phone_number!, ...(input.sender_id === undefined ? {} : { sender_id: input.sender_id }) }
    })
  )
}
