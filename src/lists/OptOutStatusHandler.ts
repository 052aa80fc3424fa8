import { Effect, Option } from "effect"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ChatappStatusHandler, ChatappStatusInput } from "../kernel/ChatappEvents.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { MarketingOptOutRecord } from "../ports/ListStore.ts"

/** What the opt-out status handler needs. */
export interface OptOutStatusDeps {
  readonly contacts: ContactService["Service"]
  readonly recordOptOut: (optOut: MarketingOptOutRecord) => Effect.Effect<void, StorageError>
}

/**
 * The handler of `failed` statuses whose error says the recipient stopped marketing messages
 * (`opted_out`): the operator reports it in status webhooks as well as on the send, and either way
 * the opt-out is recorded on the number (`operator_error`), so the next campaign skips the contact.
 * The contact is the tenant's one holding the recipient's number; none is created for a stranger.
 */
export const makeOptOutStatusHandler = (deps: OptOutStatusDeps): ChatappStatusHandler => {
  const optsOut = ({ event }: ChatappStatusInput) => event.status === "failed" && event.errorKind === "opted_out"
  const handleMany = Effect.fnUntraced(function*(inputs: ReadonlyArray<ChatappStatusInput>) {
    const optedOut = inputs.filter(optsOut)
    if (optedOut.length === 0) return
    const at = yield* now
    for (const { channel, event } of optedOut) {
      const digits = event.recipientId?.replace(/\D/g, "") ?? ""
      if (digits === "") continue
      const contact = yield* deps.contacts.findByIdentity(channel.tenant_id, { phone: `+${digits}` })
      if (Option.isNone(contact)) continue
      yield* deps.recordOptOut({
        tenant_id: channel.tenant_id,
        contact_id: contact.value.id,
        channel_id: channel.id,
        source: "operator_error",
        opted_out_at: at
      })
    }
  })
  return {
    name: "marketing opt-outs",
    handle: (input) => Effect.as(handleMany([input]), "continue" as const),
    handleMany,
    // An opt-out recorded again would undo the contact's opting in since: once, by its key.
    repeatable: (input) => !optsOut(input)
  }
}
