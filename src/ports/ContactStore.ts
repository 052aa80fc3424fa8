import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** A contact as stored. `phone` and `email` are each unique within a tenant. */
export interface ContactRecord {
  readonly id: string
  readonly tenant_id: string
  readonly name: string | null
  readonly phone: string | null
  readonly email: string | null
  readonly language: string | null
  readonly custom_fields: Readonly<Record<string, unknown>>
  readonly created_at: string
  readonly updated_at: string | null
}

/** What erasing a contact did (see `ContactStore.erase`). */
export interface ContactErasure {
  /** The contact's conversations, kept with their personal fields cleared and closed if they were open. */
  readonly conversation_ids: ReadonlyArray<string>
  /** Messages of those conversations whose text and content were cleared. */
  readonly messages: number
  /** Emails of those conversations whose addresses, subject, bodies and headers were cleared. */
  readonly emails: number
  /**
   * Blob keys of the files whose records were removed (files of those messages and emails that no
   * other conversation's email or team chat message also carries): the caller deletes these bytes
   * once the transaction has committed.
   */
  readonly blob_keys: ReadonlyArray<string>
}

/** Contacts; every method is scoped by tenant id. */
export class ContactStore extends Context.Service<ContactStore, {
  /** Stores a new contact; a duplicate phone or email fails with `UniqueViolation`. */
  readonly insert: (contact: ContactRecord) => Effect.Effect<void, StorageError>
  readonly get: (tenantId: string, id: string) => Effect.Effect<Option.Option<ContactRecord>, StorageError>
  /** Replaces the stored contact `contact.id` of `tenantId`; `false` when it does not exist there. */
  readonly update: (tenantId: string, contact: ContactRecord) => Effect.Effect<boolean, StorageError>
  /** One page, newest first, and the tenant's total. */
  readonly list: (
    tenantId: string,
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<ContactRecord>; readonly total: number }, StorageError>
  /** The tenant's contacts among `ids` (any order; unknown ids are left out). */
  readonly getMany: (tenantId: string, ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<ContactRecord>, StorageError>
  /** Up to `limit` of the tenant's contacts by id after `afterId` (keyset: contacts added meanwhile are not read twice). */
  readonly pageById: (
    tenantId: string,
    afterId: string | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<ContactRecord>, StorageError>
  /** The tenant's contact holding `field` = `value`, if any. */
  readonly findBy: (
    tenantId: string,
    field: "phone" | "email",
    value: string
  ) => Effect.Effect<Option.Option<ContactRecord>, StorageError>
  /**
   * The batch form of `findBy` phone and `insert` together: stores each of `candidates` (new
   * contacts of `tenantId`, one per phone) whose phone no contact of the tenant holds yet, and
   * resolves to the tenant's contact of every candidate's phone, with the ids of those it stored. A
   * contact another transaction stored meanwhile is found, never doubled.
   */
  readonly findOrInsertByPhones: (
    tenantId: string,
    candidates: ReadonlyArray<ContactRecord>
  ) => Effect.Effect<{ readonly contacts: ReadonlyArray<ContactRecord>; readonly inserted: ReadonlySet<string> }, StorageError>
  /**
   * Erases the contact `contactId` of `tenantId` and the personal data stored about it, as one atomic
   * unit (joining the caller's transaction): the contact itself, its tags, list subscriptions and
   * marketing opt-outs are deleted; its conversations are kept (ids, channel, times) with the subject
   * cleared, open ones closed at `at`; their messages keep id, type, status and times with text and
   * content cleared (content becomes `{"erased": true}`, plus `email_message_id` where it had one) and
   * the error's message cleared; their emails keep ids, direction, status and times with subject,
   * addresses, bodies, headers and threading ids cleared (the Message-ID becomes `<email id>@erased.invalid`);
   * the records of their files, those files' summaries and inline-image records and the emails' file
   * lists are deleted, except a file another conversation's email or a team chat message also carries;
   * its flow sessions keep their ids and status with answers, write-back result and error cleared.
   * Campaign recipients are kept as they are (their contact id names nobody any more). Nothing of
   * another tenant is read or changed. Resolves to none when the tenant has no such contact (nothing
   * changed).
   */
  readonly erase: (
    tenantId: string,
    contactId: string,
    at: string
  ) => Effect.Effect<Option.Option<ContactErasure>, StorageError>
}>()("omnichannel-core/ports/ContactStore") {}
