import { Context, Effect, Layer, Option } from "effect"
import { NotFound } from "../kernel/ApiError.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import { BlobStore } from "../ports/BlobStore.ts"
import { ContactStore } from "../ports/ContactStore.ts"
import { OutboxStore } from "../ports/OutboxStore.ts"
import { Transactor } from "../ports/Transactor.ts"
import type { ContactDeleted } from "./Contact.ts"

/** Blob deletes in flight at once after an erasure. */
const BLOB_DELETES_AT_ONCE = 8

/**
 * The erasure of a contact (`DELETE /contacts/{contact_id}`): its personal data goes from every
 * table in one transaction (see `ContactStore.erase`) with `contact.deleted`; its files' bytes are
 * deleted from the blob store after the commit. A crash between the two leaves only bytes no record
 * names (never a record without its bytes); a failed blob delete is logged and left the same way.
 */
export class ContactErasureService extends Context.Service<ContactErasureService, {
  /**
   * Erases the tenant's contact `id` (404 when the tenant has none: nothing changes). Runs its own
   * transaction and deletes the bytes after it, so it is never called inside another one.
   */
  readonly erase: (tenantId: string, id: string) => Effect.Effect<ContactDeleted, NotFound | StorageError>
}>()("omnichannel-core/contacts/ContactErasureService") {
  static readonly layer = Layer.effect(
    ContactErasureService,
    Effect.gen(function*() {
      const contacts = yield* ContactStore
      const outbox = yield* OutboxStore
      const transactor = yield* Transactor
      const blobs = yield* BlobStore

      const deleteBytes = (key: string) =>
        blobs.delete(key).pipe(
          Effect.catch((error) =>
            Effect.logWarning("could not delete an erased contact's file; its bytes stay without a record", error).pipe(
              Effect.annotateLogs({ blob_key: key })
            )
          )
        )

      return ContactErasureService.of({
        erase: Effect.fn("ContactErasureService.erase")(function*(tenantId, id) {
          const at = yield* now
          const erased = yield* transactor.withTransaction(Effect.gen(function*() {
            const done = yield* contacts.erase(tenantId, id, at)
            if (Option.isNone(done)) return yield* new NotFound({ message: `Contact ${id} not found` })
            yield* outbox.append([
              yield* makeEvent({
                type: "contact.deleted",
                tenantId,
                data: { contact: { id }, conversation_ids: done.value.conversation_ids, deleted_at: at }
              })
            ])
            return done.value
          }))
          yield* Effect.forEach(erased.blob_keys, deleteBytes, { concurrency: BLOB_DELETES_AT_ONCE, discard: true })
          return {
            id,
            deleted: true as const,
            conversation_ids: erased.conversation_ids,
            messages_erased: erased.messages,
            emails_erased: erased.emails,
            files_deleted: erased.blob_keys.length
          }
        })
      })
    })
  )
}
