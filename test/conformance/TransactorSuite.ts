import { Effect, Exit, Option, Schema } from "effect"
import { expect, it } from "vitest"
import { AccountStore } from "../../src/ports/AccountStore.ts"
import { ApiKeyStore } from "../../src/ports/ApiKeyStore.ts"
import { AttachmentStore } from "../../src/ports/AttachmentStore.ts"
import { CampaignStore } from "../../src/ports/CampaignStore.ts"
import { ChannelStore } from "../../src/ports/ChannelStore.ts"
import { ConnectTokenStore } from "../../src/ports/ConnectTokenStore.ts"
import { ContactStore } from "../../src/ports/ContactStore.ts"
import { ConversationStore } from "../../src/ports/ConversationStore.ts"
import { EmailStore } from "../../src/ports/EmailStore.ts"
import { FlowStore } from "../../src/ports/FlowStore.ts"
import { InboundStore } from "../../src/ports/InboundStore.ts"
import { ListStore } from "../../src/ports/ListStore.ts"
import { MessageStore, type MessageStatusReport } from "../../src/ports/MessageStore.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { StoragePorts } from "../../src/ports/StoragePorts.ts"
import { SummaryStore } from "../../src/ports/SummaryStore.ts"
import { TeamChatStore } from "../../src/ports/TeamChatStore.ts"
import { TenantStore } from "../../src/ports/TenantStore.ts"
import { Transactor } from "../../src/ports/Transactor.ts"
import { WebhookDeliveryStore } from "../../src/ports/WebhookDeliveryStore.ts"
import { WebhookEndpointStore } from "../../src/ports/WebhookEndpointStore.ts"
import { at, deliveryRecord } from "./DeliveryFixtures.ts"
import {
  apiKeyRecord,
  attachmentRecord,
  billingAccountRecord,
  campaignBatchRecord,
  campaignRecipientRecord,
  campaignRecord,
  channelRecord,
  connectTokenRecord,
  contactRecord,
  conversationRecord,
  customFieldRecord,
  emailAttachmentRecord,
  emailIntegrationRecord,
  emailMessageRecord,
  flowDefinitionRecord,
  flowSessionRecord,
  flowVersionRecord,
  inboundPayloadRecord,
  inlineImageRecord,
  listRecord,
  marketingOptOutRecord,
  messageRecord,
  outboxEvent,
  seedTenant,
  subscriptionRecord,
  summaryRecord,
  creditGrant,
  tagRecord,
  teamChatChannelRecord,
  teamChatMessageRecord,
  tenantRecord,
  userRecord,
  webhookEndpointRecord
} from "./Fixtures.ts"
import { byId, eventsOf, makeSuite, type Suite, type UseHarness } from "./Harness.ts"
import type { StoredTable } from "./StorageAdapter.ts"

/** The failure a use case raises after writing, to see whether its writes survive. */
class UseCaseFailed extends Schema.TaggedError<UseCaseFailed>()("UseCaseFailed", {}) {}

const CHANGED_AT = "2026-11-23T09:00:00.000Z"

/** The summary request window the rows count one request in. */
const RATE_WINDOW = "2026-11-22T10:15:00.000Z"

/** The readers the Transactor suite checks with: every table's but the fan-out leases'. */
type EveryTable = Exclude<StoredTable, "fanOutLease">

/**
 * A new row for every port, one tenant's. The delivery is finished, the endpoint active, the
 * inbound payload due only in the year 9000 and the campaign never due, so no other suite's claim
 * takes them up.
 */
const rowsOfEveryPort = () => {
  const user = userRecord()
  const account = billingAccountRecord(user.id)
  const tenant = tenantRecord(account.id)
  const endpoint = webhookEndpointRecord(tenant.id)
  const channel = channelRecord(tenant.id)
  const contact = contactRecord(tenant.id)
  const conversation = conversationRecord(tenant.id, { channel_id: channel.id, contact_id: contact.id })
  const message = messageRecord(conversation)
  const emailIntegration = emailIntegrationRecord(tenant.id)
  const emailThread = conversationRecord(tenant.id, { channel_id: emailIntegration.id, contact_id: contact.id, kind: "email" })
  const email = emailMessageRecord(emailThread, emailIntegration.id)
  const list = listRecord(tenant.id, { is_default: true })
  const campaign = campaignRecord(tenant.id, {
    channel_ids: [channel.id],
    variable_values: ["Zoë"],
    audience: { list_ids: [list.id], contact_ids: [contact.id] },
    split_sending: { mode: "ramp", daily_batch: null, send_time: null }
  })
  const flowDefinition = flowDefinitionRecord(tenant.id, { channel_id: channel.id, alerts: { ENDPOINT_ERROR_RATE: "ACTIVATED" } })
  const flowVersion = flowVersionRecord(flowDefinition, 1)
  const tag = tagRecord(tenant.id)
  const teamChatChannel = teamChatChannelRecord(tenant.id)
  const statusReport: MessageStatusReport = {
    tenant_id: tenant.id,
    channel_id: channel.id,
    external_id: message.external_id!,
    status: "read",
    occurred_at: "2026-11-22T10:16:00.000Z",
    error: null,
    received_at: "2026-11-22T10:16:01.000Z"
  }
  return {
    user,
    account,
    tenant,
    apiKey: apiKeyRecord(tenant.id),
    contact,
    event: outboxEvent(tenant.id),
    channel,
    connectToken: connectTokenRecord(tenant.id),
    endpoint,
    delivery: deliveryRecord(endpoint, { status: "success", attempt_number: 1, completed_at: at("12:00:01.000") }),
    inboundPayload: inboundPayloadRecord({ next_attempt_at: "9000-01-01T00:00:00.000Z" }),
    handledKey: message.external_id!,
    conversation,
    message,
    statusReport,
    attachment: attachmentRecord(tenant.id),
    emailIntegration,
    emailThread,
    email,
    emailAttachment: emailAttachmentRecord(tenant.id, email.id, 0),
    inlineImage: inlineImageRecord(tenant.id),
    list,
    subscription: subscriptionRecord(tenant.id, list.id, { contact_id: contact.id }),
    optOut: marketingOptOutRecord(tenant.id, { contact_id: contact.id, channel_id: channel.id }),
    campaign,
    recipient: campaignRecipientRecord(campaign, 0, { contact_id: contact.id }),
    batch: campaignBatchRecord(campaign, 0),
    flowDefinition,
    flowVersion,
    flowSession: flowSessionRecord(flowDefinition, {
      version_id: flowVersion.id,
      version_number: flowVersion.number,
      contact_id: contact.id,
      conversation_id: conversation.id,
      message_id: message.id
    }),
    customField: customFieldRecord(tenant.id),
    tag,
    contactTag: { tenant_id: tenant.id, contact_id: contact.id, tag_id: tag.id, tagged_at: "2026-11-22T10:17:00.000Z" },
    teamChatChannel,
    teamChatMember: { channel_id: teamChatChannel.id, user_id: user.id, tenant_id: tenant.id, joined_at: teamChatChannel.created_at },
    teamChatMessage: teamChatMessageRecord(teamChatChannel, { author_user_id: user.id, attachment_ids: [globalThis.crypto.randomUUID()] }),
    summary: summaryRecord(tenant.id),
    credit: creditGrant(tenant.id, 7)
  }
}
type Rows = ReturnType<typeof rowsOfEveryPort>

/** Stores `rows` through every port. */
const insertEvery = (rows: Rows) =>
  Effect.gen(function*() {
    yield* AccountStore.use((s) => Effect.andThen(s.insertUser(rows.user), s.insertBillingAccount(rows.account)))
    yield* TenantStore.use((s) => s.insert(rows.tenant))
    yield* ApiKeyStore.use((s) => s.insert(rows.apiKey))
    yield* ContactStore.use((s) => s.insert(rows.contact))
    yield* OutboxStore.use((s) => s.append([rows.event]))
    yield* ChannelStore.use((s) => s.insert(rows.channel))
    yield* ConnectTokenStore.use((s) => s.insert(rows.connectToken))
    yield* WebhookEndpointStore.use((s) => s.insert(rows.endpoint))
    yield* WebhookDeliveryStore.use((s) => s.insertMany([rows.delivery]))
    yield* InboundStore.use((s) => Effect.andThen(s.insert(rows.inboundPayload), s.markHandled("chatapp", rows.handledKey, CHANGED_AT)))
    yield* ConversationStore.use((s) => Effect.andThen(s.insert(rows.conversation), s.insert(rows.emailThread)))
    yield* MessageStore.use((s) => Effect.andThen(s.insert(rows.message), s.recordStatus(rows.statusReport)))
    yield* AttachmentStore.use((s) => s.insert(rows.attachment))
    yield* EmailStore.use((s) =>
      Effect.all([
        s.insertIntegration(rows.emailIntegration),
        s.insertMessage(rows.email),
        s.insertAttachments([rows.emailAttachment]),
        s.insertInlineImage(rows.inlineImage)
      ], { discard: true })
    )
    yield* ListStore.use((s) =>
      Effect.all([s.insertList(rows.list), s.putSubscription(rows.subscription), s.putOptOut(rows.optOut)], { discard: true })
    )
    yield* CampaignStore.use((s) =>
      Effect.all([
        s.insert(rows.campaign),
        s.insertRecipients([rows.recipient]),
        s.putBatches(rows.tenant.id, rows.campaign.id, [rows.batch])
      ], { discard: true })
    )
    yield* FlowStore.use((s) =>
      Effect.all([
        s.insertDefinition(rows.flowDefinition),
        s.insertVersion(rows.flowVersion),
        s.insertSession(rows.flowSession),
        s.insertCustomField(rows.customField),
        s.insertTag(rows.tag),
        s.tagContact(rows.tenant.id, rows.contactTag.contact_id, rows.contactTag.tag_id, rows.contactTag.tagged_at)
      ], { discard: true })
    )
    yield* TeamChatStore.use((s) =>
      Effect.andThen(s.insertChannel(rows.teamChatChannel, [rows.teamChatMember]), s.insertMessage(rows.teamChatMessage))
    )
    yield* SummaryStore.use((s) =>
      Effect.all([
        s.insertPending(rows.summary),
        s.addCredits(rows.credit),
        s.takeRequest(rows.tenant.id, RATE_WINDOW, [{ key: "workspace", limit: 60 }])
      ], { discard: true })
    )
  })

/** Changes `rows` through every port that changes rows, and reports whether each change found its row. */
const changeEvery = (rows: Rows) =>
  Effect.all({
    tenant: TenantStore.use((s) => s.setSmsEnabled(rows.tenant.id, true, CHANGED_AT)),
    apiKey: ApiKeyStore.use((s) => s.revoke(rows.apiKey.id, CHANGED_AT)).pipe(Effect.map(Option.isSome)),
    contact: ContactStore.use((s) => s.update(rows.tenant.id, { ...rows.contact, name: "Changed" })),
    channel: ChannelStore.use((s) => s.update(rows.tenant.id, { ...rows.channel, name: "Changed" })),
    connectToken: ConnectTokenStore.use((s) => s.compareAndSet(rows.connectToken, { ...rows.connectToken, uses_count: 1 })),
    endpoint: WebhookEndpointStore.use((s) => s.update(rows.tenant.id, { ...rows.endpoint, name: "Changed" })),
    delivery: WebhookDeliveryStore.use((s) => s.saveMany([{ state: { ...rows.delivery, status: "failed" } }]))
      .pipe(Effect.map((written) => written.has(rows.delivery.id))),
    conversation: ConversationStore.use((s) => s.update(rows.tenant.id, { ...rows.conversation, status: "closed" })),
    message: MessageStore.use((s) => s.update(rows.tenant.id, { ...rows.message, text: "Changed" })),
    attachment: AttachmentStore.use((s) =>
      Effect.andThen(
        s.attach(rows.tenant.id, [rows.attachment.id], rows.message.id, rows.conversation.id),
        Effect.map(s.get(rows.tenant.id, rows.attachment.id), (a) => Option.getOrUndefined(a)?.message_id === rows.message.id)
      )
    ),
    email: EmailStore.use((s) => s.updateMessage(rows.tenant.id, { ...rows.email, subject: "Changed" })),
    list: ListStore.use((s) => s.updateList(rows.tenant.id, { ...rows.list, deleted_at: CHANGED_AT })),
    subscription: ListStore.use((s) =>
      Effect.andThen(
        s.putSubscription({ ...rows.subscription, status: "unsubscribed", unsubscribed_at: CHANGED_AT, updated_at: CHANGED_AT }),
        Effect.map(
          s.getSubscription(rows.tenant.id, rows.list.id, rows.contact.id),
          (found) => Option.getOrUndefined(found)?.status === "unsubscribed"
        )
      )
    ),
    campaign: CampaignStore.use((s) => s.update(rows.tenant.id, { ...rows.campaign, status: "scheduled", updated_at: CHANGED_AT })),
    recipient: CampaignStore.use((s) =>
      Effect.andThen(
        s.updateRecipient({ ...rows.recipient, state: "skipped", skip_reason: "opted_out", updated_at: CHANGED_AT }),
        Effect.map(s.counts(rows.tenant.id, rows.campaign.id), (counts) => counts.byState.skipped === 1)
      )
    ),
    batches: CampaignStore.use((s) =>
      Effect.andThen(
        s.putBatches(rows.tenant.id, rows.campaign.id, [{ ...rows.batch, planned_size: 7 }, { ...rows.batch, day: 1 }]),
        Effect.map(s.batchesOf(rows.tenant.id, rows.campaign.id), (batches) => batches.length === 2)
      )
    ),
    flowDefinition: FlowStore.use((s) =>
      s.updateDefinition(rows.tenant.id, { ...rows.flowDefinition, status: "PUBLISHED", alerts: {}, updated_at: CHANGED_AT })
    ),
    flowSession: FlowStore.use((s) =>
      s.completeSession(rows.tenant.id, {
        ...rows.flowSession,
        status: "completed",
        answers: { name: "Zoë" },
        completed_at: CHANGED_AT
      })
    ),
    contactTag: FlowStore.use((s) =>
      Effect.andThen(
        // The port keeps no reference to the tag: any id is another tag.
        s.tagContact(rows.tenant.id, rows.contact.id, globalThis.crypto.randomUUID(), CHANGED_AT),
        Effect.map(s.tagsOf(rows.tenant.id, rows.contact.id), (tagIds) => tagIds.length === 2)
      )
    ),
    summary: SummaryStore.use((s) =>
      s.settle(rows.tenant.id, rows.summary.id, 1, {
        status: "ok",
        text: "Changed",
        sections: [],
        pages_read: 1,
        pages_total: 1,
        truncated: false,
        model: "test",
        error: null,
        updated_at: CHANGED_AT
      })
    ),
    credits: SummaryStore.use((s) => s.addCredits(creditGrant(rows.tenant.id, 5, { created_at: CHANGED_AT }))),
    counter: SummaryStore.use((s) =>
      Effect.map(s.takeRequest(rows.tenant.id, RATE_WINDOW, [{ key: "workspace", limit: 60 }]), Option.isNone)
    )
  })

/** Whether each change of `changeEvery` found its row: all of them. */
const EVERY_CHANGE = {
  tenant: true,
  apiKey: true,
  contact: true,
  channel: true,
  connectToken: true,
  endpoint: true,
  delivery: true,
  conversation: true,
  message: true,
  attachment: true,
  email: true,
  list: true,
  subscription: true,
  campaign: true,
  recipient: true,
  batches: true,
  flowDefinition: true,
  flowSession: true,
  contactTag: true,
  summary: true,
  credits: true,
  counter: true
}

/** Every row of `rows` as stored, `undefined` or an empty list where there is none. */
const storedOf = async (h: UseHarness<never, EveryTable>, rows: Rows) => ({
  user: await h().stored.user(rows.user.id),
  account: await h().stored.billingAccount(rows.account.id),
  tenant: await h().stored.tenant(rows.tenant.id),
  apiKey: await h().stored.apiKey(rows.apiKey.lookup),
  contacts: await h().stored.contacts(rows.tenant.id),
  events: eventsOf(await h().stored.outboxEvents(rows.tenant.id)),
  channels: await h().stored.channels(rows.tenant.id),
  connectTokens: await h().stored.connectTokens(rows.tenant.id),
  endpoints: await h().stored.webhookEndpoints(rows.tenant.id),
  deliveries: await h().stored.webhookDeliveries(rows.tenant.id),
  inboundPayload: await h().stored.inboundPayload(rows.inboundPayload.id),
  handledAt: await h().stored.inboundHandled("chatapp", rows.handledKey),
  conversations: await h().stored.conversations(rows.tenant.id),
  messages: await h().stored.messages(rows.tenant.id),
  messageStatuses: await h().stored.messageStatuses(rows.tenant.id),
  attachments: await h().stored.attachments(rows.tenant.id),
  emailIntegrations: await h().stored.emailIntegrations(rows.tenant.id),
  emailMessages: await h().stored.emailMessages(rows.tenant.id),
  emailAttachments: await h().stored.emailAttachments(rows.tenant.id),
  inlineImages: await h().stored.inlineImages(rows.tenant.id),
  lists: await h().stored.lists(rows.tenant.id),
  listSubscriptions: await h().stored.listSubscriptions(rows.tenant.id),
  marketingOptOuts: await h().stored.marketingOptOuts(rows.tenant.id),
  campaigns: await h().stored.campaigns(rows.tenant.id),
  campaignRecipients: await h().stored.campaignRecipients(rows.tenant.id),
  campaignBatches: await h().stored.campaignBatches(rows.tenant.id),
  flowDefinitions: await h().stored.flowDefinitions(rows.tenant.id),
  flowVersions: await h().stored.flowVersions(rows.tenant.id),
  flowSessions: await h().stored.flowSessions(rows.tenant.id),
  customFields: await h().stored.customFields(rows.tenant.id),
  tags: await h().stored.tags(rows.tenant.id),
  contactTags: await h().stored.contactTags(rows.tenant.id),
  teamChatChannels: await h().stored.teamChatChannels(rows.tenant.id),
  teamChatMembers: await h().stored.teamChatMembers(rows.tenant.id),
  teamChatMessages: await h().stored.teamChatMessages(rows.tenant.id),
  attachmentSummaries: await h().stored.attachmentSummaries(rows.tenant.id),
  creditEntries: await h().stored.creditEntries(rows.tenant.id),
  creditBalance: await h().stored.creditBalance(rows.tenant.id),
  rateCounters: await h().stored.rateCounters(rows.tenant.id)
})

/** `rows` as `storedOf` reads them once stored. */
const asStored = (rows: Rows) => ({
  user: rows.user,
  account: rows.account,
  tenant: rows.tenant,
  apiKey: rows.apiKey,
  contacts: [rows.contact],
  events: [rows.event],
  channels: [rows.channel],
  connectTokens: [rows.connectToken],
  endpoints: [rows.endpoint],
  deliveries: [rows.delivery],
  inboundPayload: rows.inboundPayload,
  handledAt: CHANGED_AT,
  conversations: [rows.conversation, rows.emailThread].sort(byId),
  messages: [rows.message],
  messageStatuses: [rows.statusReport],
  attachments: [rows.attachment],
  emailIntegrations: [rows.emailIntegration],
  emailMessages: [rows.email],
  emailAttachments: [rows.emailAttachment],
  inlineImages: [rows.inlineImage],
  lists: [rows.list],
  listSubscriptions: [rows.subscription],
  marketingOptOuts: [rows.optOut],
  campaigns: [rows.campaign],
  campaignRecipients: [rows.recipient],
  campaignBatches: [rows.batch],
  flowDefinitions: [rows.flowDefinition],
  flowVersions: [rows.flowVersion],
  flowSessions: [rows.flowSession],
  customFields: [rows.customField],
  tags: [rows.tag],
  contactTags: [rows.contactTag],
  teamChatChannels: [rows.teamChatChannel],
  teamChatMembers: [rows.teamChatMember],
  teamChatMessages: [rows.teamChatMessage],
  attachmentSummaries: [rows.summary],
  creditEntries: [rows.credit],
  creditBalance: { balance: 7, charged_total: 0 },
  rateCounters: [{ key: "workspace", window_start: RATE_WINDOW, count: 1 }]
})

const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) => Transactor.use((t) => t.withTransaction(effect))

/** Transactor: one transaction spans every port; it commits all their writes, or on failure none. */
export const transactorSuite: Suite<StoragePorts, EveryTable> = makeSuite({
  name: "Transactor",
  tables: [
    "user",
    "billingAccount",
    "tenant",
    "apiKey",
    "contacts",
    "outboxEvents",
    "channels",
    "connectTokens",
    "webhookEndpoints",
    "webhookDeliveries",
    "inboundPayload",
    "inboundHandled",
    "conversations",
    "messages",
    "messageStatuses",
    "attachments",
    "emailIntegrations",
    "emailMessages",
    "emailAttachments",
    "inlineImages",
    "lists",
    "listSubscriptions",
    "marketingOptOuts",
    "campaigns",
    "campaignRecipients",
    "campaignBatches",
    "flowDefinitions",
    "flowVersions",
    "flowSessions",
    "customFields",
    "tags",
    "contactTags",
    "teamChatChannels",
    "teamChatMembers",
    "teamChatMessages",
    "attachmentSummaries",
    "creditEntries",
    "creditBalance",
    "rateCounters"
  ],
  tests: (h) => {
    it("stays usable after a tenant insert found its slug taken: the next write in it commits", async () => {
      const { tenant } = await h().run(seedTenant)
      const clash = tenantRecord(tenant.billing_account_id, { slug: tenant.slug })
      const retried = tenantRecord(tenant.billing_account_id)
      const inserted = await h().run(inTransaction(Effect.gen(function*() {
        const store = yield* TenantStore
        return [yield* store.insertUnlessSlugTaken(clash), yield* store.insertUnlessSlugTaken(retried)]
      })))
      expect(inserted).toEqual([false, true])
      expect(await h().run(TenantStore.use((s) => s.get(retried.id)))).toEqual(Option.some(retried))
    })

    it("commits the rows every port wrote in one transaction, together", async () => {
      const rows = rowsOfEveryPort()

      await h().run(inTransaction(insertEvery(rows)))

      expect(await storedOf(h, rows)).toEqual(asStored(rows))
    })

    it("keeps none of the rows any port inserted when the transaction fails", async () => {
      const rows = rowsOfEveryPort()

      const exit = await h().exit(inTransaction(Effect.andThen(insertEvery(rows), Effect.fail(new UseCaseFailed()))))

      expect(Exit.isFailure(exit)).toBe(true)
      expect(await storedOf(h, rows)).toEqual({
        user: undefined,
        account: undefined,
        tenant: undefined,
        apiKey: undefined,
        contacts: [],
        events: [],
        channels: [],
        connectTokens: [],
        endpoints: [],
        deliveries: [],
        inboundPayload: undefined,
        handledAt: undefined,
        conversations: [],
        messages: [],
        messageStatuses: [],
        attachments: [],
        emailIntegrations: [],
        emailMessages: [],
        emailAttachments: [],
        inlineImages: [],
        lists: [],
        listSubscriptions: [],
        marketingOptOuts: [],
        campaigns: [],
        campaignRecipients: [],
        campaignBatches: [],
        flowDefinitions: [],
        flowVersions: [],
        flowSessions: [],
        customFields: [],
        tags: [],
        contactTags: [],
        teamChatChannels: [],
        teamChatMembers: [],
        teamChatMessages: [],
        attachmentSummaries: [],
        creditEntries: [],
        creditBalance: undefined,
        rateCounters: []
      })
    })

    it("keeps every row any port changed as it was when the transaction fails", async () => {
      const rows = rowsOfEveryPort()
      await h().run(insertEvery(rows))
      let changed: typeof EVERY_CHANGE | undefined

      const exit = await h().exit(inTransaction(Effect.gen(function*() {
        changed = yield* changeEvery(rows)
        return yield* new UseCaseFailed()
      })))

      expect(Exit.isFailure(exit)).toBe(true)
      // Every change took effect inside the transaction, so what survives is the rollback's doing.
      expect(changed).toEqual(EVERY_CHANGE)
      expect(await storedOf(h, rows)).toEqual(asStored(rows))
    })
  }
})
