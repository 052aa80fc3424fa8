import { Effect } from "effect"
import type { ChatPlatform, ChatPlatformError } from "../../src/ports/ChatPlatform.ts"
import { type ChannelProvider, type ProviderField, ProviderRejected } from "../../src/ports/ChannelProviders.ts"

interface FieldRule extends ProviderField {
  /** What is wrong with the value, or undefined when it is fine. */
  readonly check: (value: string) => string | undefined
}

const pattern = (re: RegExp, message: string) => (value: string) => (re.test(value) ? undefined : message)
const DIGITS = pattern(/^\d{5,20}$/, "Digits only, as the provider shows it")

/** The inputs of the connect page, with the same checks as the simulated `chatapp` provider. */
const FIELDS: ReadonlyArray<FieldRule> = [
  { name: "phone_number_id", label: "Phone number ID", secret: false, required: true, check: DIGITS },
  { name: "business_account_id", label: "Business account ID", secret: false, required: true, check: DIGITS },
  {
    name: "access_token",
    label: "Access token (system user)",
    secret: true,
    required: true,
    check: pattern(/^\S{20,512}$/, "At least 20 characters, no spaces")
  }
]

/** The connect page's refusal for what the operator answered to the credential check. */
const refusedBy = (error: ChatPlatformError): ProviderRejected => {
  const said = error.userMessage ?? error.message
  if (error.kind === "auth") {
    return new ProviderRejected({
      message: "The operator refused these credentials.",
      fields: { access_token: `Refused by the operator: ${said}` }
    })
  }
  // Graph's code 100 on `GET /{phone_number_id}`: no such number, or none this token may see.
  if (error.code === 100) {
    return new ProviderRejected({
      message: "The operator refused these credentials.",
      fields: { phone_number_id: `Refused by the operator: ${said}` }
    })
  }
  return new ProviderRejected({
    message: "The operator could not be reached to check these credentials; please try again in a few minutes.",
    fields: {}
  })
}

/**
 * The `chatapp` channel provider over a `ChatPlatform`: the inputs are checked for format, then
 * with the operator itself (`GET /{phone_number_id}` with the token), whose answer names the channel.
 */
export const chatappProvider = (platform: ChatPlatform["Service"]): ChannelProvider => ({
  fields: FIELDS.map(({ check: _check, ...field }) => field),
  connect: (raw) =>
    Effect.gen(function*() {
      const input: Record<string, string> = {}
      const errors: Record<string, string> = {}
      for (const field of FIELDS) {
        const value = (raw[field.name] ?? "").trim()
        const problem = value === "" ? "Required" : field.check(value)
        if (problem !== undefined) errors[field.name] = problem
        input[field.name] = value
      }
      if (Object.keys(errors).length > 0) {
        return yield* new ProviderRejected({ message: "Some details need fixing.", fields: errors })
      }
      const phoneNumberId = input.phone_number_id!
      const businessAccountId = input.business_account_id!
      const accessToken = input.access_token!
      const number = yield* platform.phoneNumber({ phoneNumberId, businessAccountId, accessToken }).pipe(
        Effect.mapError(refusedBy)
      )
      return {
        external_id: phoneNumberId,
        name: `Chat app ${number.displayPhoneNumber ?? phoneNumberId}`,
        config: {
          phone_number_id: phoneNumberId,
          business_account_id: businessAccountId,
          ...(number.displayPhoneNumber === null ? {} : { display_phone_number: number.displayPhoneNumber })
        },
        secrets: { access_token: accessToken }
      }
    })
})
