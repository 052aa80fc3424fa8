import { Context, type Effect, type Option } from "effect"
import type { StorageError } from "./StorageError.ts"

/** An input of a flow screen: its name and the platform's component type (`TextInput`, `OptIn`, `CheckboxGroup`, `DatePicker`, `PhotoPicker`, …). */
export interface FlowInput {
  readonly name: string
  readonly type: string
}

/** A screen of a flow version: its inputs and which of them are sensitive (masked before storage). */
export interface FlowScreen {
  readonly id: string
  readonly inputs: ReadonlyArray<FlowInput>
  readonly sensitive_fields: ReadonlyArray<string>
}

/** Where an answer is written back on the contact the flow was sent to. */
export interface WritebackMapping {
  readonly input: string
  readonly target: "contact_field" | "custom_field" | "tag" | "subscription" | "unsubscription"
  /** For `contact_field`: `name`, `email`, `phone`, `language`. */
  readonly field?: string
  readonly custom_field_id?: string
  readonly tag_id?: string
  readonly list_id?: string
}

/**
 * A flow of a chat-app channel, as the platform knows it (`meta_flow_id`), with the status and
 * health the platform last reported.
 */
export interface FlowDefinitionRecord {
  readonly id: string
  readonly tenant_id: string
  readonly channel_id: string
  readonly name: string
  readonly meta_flow_id: string
  /** `DRAFT`, `PUBLISHED`, `DEPRECATED`, `BLOCKED`, `THROTTLED`; null until reported. */
  readonly status: string | null
  /** `GREEN` or `RED`; null until an alert was reported. */
  readonly health_status: string | null
  /** Alert event (`ENDPOINT_ERROR_RATE`, …) → `ACTIVATED` or `DEACTIVATED`, as last reported. */
  readonly alerts: Readonly<Record<string, string>>
  readonly created_at: string
  readonly updated_at: string | null
}

/** A numbered version of a flow definition: what its screens ask, and where answers are written. */
export interface FlowVersionRecord {
  readonly id: string
  readonly tenant_id: string
  readonly definition_id: string
  /** From 1. */
  readonly number: number
  readonly screens: ReadonlyArray<FlowScreen>
  readonly writeback: ReadonlyArray<WritebackMapping>
  readonly created_at: string
}

/** A send of a flow to a contact, and its answer once it came. */
export interface FlowSessionRecord {
  readonly id: string
  readonly tenant_id: string
  readonly definition_id: string
  readonly version_id: string | null
  readonly version_number: number | null
  readonly contact_id: string | null
  readonly conversation_id: string | null
  readonly channel_id: string
  readonly sender_type: "inbox" | "campaign" | "automation" | "api" | "adopted"
  /** `sent`, `completed`, `expired`, `failed`. */
  readonly status: string
  /** SHA-256 (hex) of the flow token, which is never stored or shown in the clear; unique. */
  readonly flow_token_hash: string
  readonly last_screen: string | null
  /** Input name → value, sensitive values masked. */
  readonly answers: Readonly<Record<string, unknown>> | null
  readonly writeback_result: Readonly<Record<string, unknown>> | null
  readonly last_error: string | null
  /** The message that carried the flow, and the answer's. */
  readonly message_id: string | null
  readonly answer_message_id: string | null
  readonly created_at: string
  readonly opened_at: string | null
  readonly completed_at: string | null
  readonly expires_at: string
}

/** A custom field a contact may hold, by key. */
export interface CustomFieldRecord {
  readonly id: string
  readonly tenant_id: string
  /** Unique in the tenant; the key in the contact's `custom_fields`. */
  readonly key: string
  readonly type: "text" | "number" | "boolean" | "date"
  readonly editable: boolean
  readonly created_at: string
}

/** A tag contacts may carry. */
export interface TagRecord {
  readonly id: string
  readonly tenant_id: string
  /** Unique in the tenant. */
  readonly name: string
  readonly created_at: string
}

/** Flow definitions, versions, sessions, custom field definitions and tags; scoped by tenant but for the token lookup. */
export class FlowStore extends Context.Service<FlowStore, {
  readonly insertDefinition: (definition: FlowDefinitionRecord) => Effect.Effect<void, StorageError>
  readonly getDefinition: (tenantId: string, id: string) => Effect.Effect<Option.Option<FlowDefinitionRecord>, StorageError>
  readonly listDefinitions: (tenantId: string) => Effect.Effect<ReadonlyArray<FlowDefinitionRecord>, StorageError>
  /**
   * Every definition of a platform flow id, in whatever tenant: the platform's flow webhooks name
   * only the business account and the flow id; the caller keeps those on that account's channels.
   */
  readonly findDefinitionsByMetaFlowId: (metaFlowId: string) => Effect.Effect<ReadonlyArray<FlowDefinitionRecord>, StorageError>
  readonly updateDefinition: (tenantId: string, definition: FlowDefinitionRecord) => Effect.Effect<boolean, StorageError>

  /** Stores a version; a number already used for the definition fails with `UniqueViolation`. */
  readonly insertVersion: (version: FlowVersionRecord) => Effect.Effect<void, StorageError>
  readonly getVersion: (tenantId: string, id: string) => Effect.Effect<Option.Option<FlowVersionRecord>, StorageError>
  /** The definition's versions, newest first. */
  readonly listVersions: (tenantId: string, definitionId: string) => Effect.Effect<ReadonlyArray<FlowVersionRecord>, StorageError>

  /** Stores a session; a token hash already stored fails with `UniqueViolation`. */
  readonly insertSession: (session: FlowSessionRecord) => Effect.Effect<void, StorageError>
  readonly getSession: (tenantId: string, id: string) => Effect.Effect<Option.Option<FlowSessionRecord>, StorageError>
  /** The session of a flow token's hash, in whatever tenant (an answer names only the token). */
  readonly findSessionByTokenHash: (tokenHash: string) => Effect.Effect<Option.Option<FlowSessionRecord>, StorageError>
  /**
   * Completes a session that is still `sent`, in one statement: `false` when it was completed (or
   * otherwise finished) already, so two answers at once complete it once.
   */
  readonly completeSession: (tenantId: string, session: FlowSessionRecord) => Effect.Effect<boolean, StorageError>
  readonly updateSession: (tenantId: string, session: FlowSessionRecord) => Effect.Effect<boolean, StorageError>
  /**
   * One page of a definition's sessions, newest first, with filters, and the total: `expires_from`
   * keeps those expiring at or after an instant, `expired_before` those expiring before it.
   */
  readonly listSessions: (
    tenantId: string,
    definitionId: string,
    filter: {
      readonly status?: string
      readonly contact_id?: string
      readonly expires_from?: string
      readonly expired_before?: string
    },
    window: { readonly limit: number; readonly offset: number }
  ) => Effect.Effect<{ readonly items: ReadonlyArray<FlowSessionRecord>; readonly total: number }, StorageError>

  /** Stores a custom field definition; a key already in the tenant fails with `UniqueViolation`. */
  readonly insertCustomField: (field: CustomFieldRecord) => Effect.Effect<void, StorageError>
  readonly getCustomField: (tenantId: string, id: string) => Effect.Effect<Option.Option<CustomFieldRecord>, StorageError>
  readonly listCustomFields: (tenantId: string) => Effect.Effect<ReadonlyArray<CustomFieldRecord>, StorageError>

  /** Stores a tag; a name already in the tenant fails with `UniqueViolation`. */
  readonly insertTag: (tag: TagRecord) => Effect.Effect<void, StorageError>
  readonly getTag: (tenantId: string, id: string) => Effect.Effect<Option.Option<TagRecord>, StorageError>
  readonly listTags: (tenantId: string) => Effect.Effect<ReadonlyArray<TagRecord>, StorageError>
  /** Puts the tag on the contact; already there changes nothing. */
  readonly tagContact: (tenantId: string, contactId: string, tagId: string, at: string) => Effect.Effect<void, StorageError>
  /** The tag ids of a contact. */
  readonly tagsOf: (tenantId: string, contactId: string) => Effect.Effect<ReadonlyArray<string>, StorageError>
}>()("omnichannel-core/ports/FlowStore") {}
