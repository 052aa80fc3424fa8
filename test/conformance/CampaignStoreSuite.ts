import { Effect, Option } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import {
  type CampaignBatchRecord,
  type CampaignChanges,
  type CampaignClaim,
  type CampaignRecipientRecord,
  type CampaignRecord,
  type CampaignStatus,
  CampaignStore,
  type RecipientState
} from "../../src/ports/CampaignStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import type { Transactor } from "../../src/ports/Transactor.ts"
import { contend } from "./Contention.ts"
import { AWKWARD_TEXTS, campaignBatchRecord, campaignRecipientRecord, campaignRecord, seedTenant } from "./Fixtures.ts"
import { byId, makeSuite, type Suite, type UseHarness } from "./Harness.ts"

/** The tables the campaign suite checks writes in. */
type CampaignTables = "campaigns" | "campaignRecipients" | "campaignBatches"

/** What the campaign suite runs against: the port, the tenants rows belong to, and transactions for contending claims. */
type CampaignPorts = CampaignStore | TenantStore | AccountStore | Transactor

type UseCampaigns = UseHarness<CampaignPorts, CampaignTables>

const NEEDS_CONNECTIONS = "needs several connections: the adapter runs one transaction at a time"

/** An instant of the campaigns' day as stored, from `HH:MM:SS.mmm`. */
const at = (time: string): string => `2026-11-26T${time}Z`
const NOW = at("12:00:00.000")
const LEASE_UNTIL = at("12:02:00.000")
/** Later than any lease a test takes: the clean-up claims there. */
const END_OF_TIME = "9999-12-31T23:59:59.999Z"

const newId = (): string => globalThis.crypto.randomUUID()
const newHolder = (): string => `holder-${newId()}`

/** Text in the order of its code units, as every database orders UUIDs. */
const byText = (x: string, y: string): number => (x < y ? -1 : x > y ? 1 : 0)

const store = <A, E, R>(f: (s: CampaignStore["Service"]) => Effect.Effect<A, E, R>) => CampaignStore.use(f)

const insertCampaigns = (campaigns: ReadonlyArray<CampaignRecord>) =>
  store((s) => Effect.forEach(campaigns, (c) => s.insert(c), { discard: true }))

const insertRecipients = (h: UseCampaigns, recipients: ReadonlyArray<CampaignRecipientRecord>) =>
  h().run(store((s) => s.insertRecipients(recipients)))

const getCampaign = (h: UseCampaigns, tenantId: string, id: string) =>
  h().run(store((s) => s.get(tenantId, id))).then(Option.getOrUndefined)

const listCampaigns = (h: UseCampaigns, tenantId: string, limit: number, offset: number) =>
  h().run(store((s) => s.list(tenantId, { limit, offset })))

const claim = (
  h: UseCampaigns,
  input: { readonly now?: string; readonly leaseUntil?: string; readonly limit?: number; readonly holder?: string } = {}
) =>
  h().run(store((s) =>
    s.claimDue({ now: input.now ?? NOW, leaseUntil: input.leaseUntil ?? LEASE_UNTIL, limit: input.limit ?? 1_000, holder: input.holder ?? newHolder() })
  ))

const ids = (claims: ReadonlyArray<CampaignClaim>) => claims.map((c) => c.campaign.id)

const release = (h: UseCampaigns, tenantId: string, id: string, holder: string) =>
  h().run(store((s) => s.release(tenantId, id, holder)))

const recipientsIn = (
  h: UseCampaigns,
  tenantId: string,
  campaignId: string,
  state: RecipientState,
  page: { readonly plannedBy?: string | null; readonly afterSeq?: number | null; readonly limit?: number } = {}
) =>
  h().run(store((s) =>
    s.recipientsIn(tenantId, campaignId, state, { plannedBy: page.plannedBy ?? null, afterSeq: page.afterSeq ?? null, limit: page.limit ?? 10_000 })
  ))

const seqs = (recipients: ReadonlyArray<CampaignRecipientRecord>) => recipients.map((r) => r.seq)

/** The stored recipients of one campaign, by seq. */
const storedRecipientsOf = async (h: UseCampaigns, campaign: CampaignRecord) =>
  (await h().stored.campaignRecipients(campaign.tenant_id)).filter((r) => r.campaign_id === campaign.id)

/** Recipients by campaign id and then seq, as stored lists come. */
const byRecipient = (x: CampaignRecipientRecord, y: CampaignRecipientRecord) => byText(x.campaign_id, y.campaign_id) || x.seq - y.seq

const findRecipientsByExternalIds = (h: UseCampaigns, tenantId: string, channelId: string, externalIds: ReadonlyArray<string>) =>
  h().run(store((s) => s.findRecipientsByExternalIds(tenantId, channelId, externalIds))).then((found) => [...found].sort(byRecipient))

type RecipientMove = Parameters<CampaignStore["Service"]["moveRecipients"]>[1][number]

/** A move of `recipient` from its state as read to `state`, with `error`, at `updated_at`. */
const moveOf = (recipient: CampaignRecipientRecord, to: Pick<CampaignRecipientRecord, "state" | "error" | "updated_at">): RecipientMove => ({
  campaign_id: recipient.campaign_id,
  seq: recipient.seq,
  expected: recipient.state,
  ...to
})

const moveRecipients = (tenantId: string, moves: ReadonlyArray<RecipientMove>) => store((s) => s.moveRecipients(tenantId, moves))

/** How `moveRecipients` names a recipient it moved. */
const keyOf = (recipient: CampaignRecipientRecord) => `${recipient.campaign_id} ${recipient.seq}`

type BatchCount = { readonly channel_id: string; readonly day: number; readonly state: RecipientState; readonly n: number }

/** Batch counts by channel, day and state: the port promises no order. */
const byBatch = (a: BatchCount, b: BatchCount) => byText(a.channel_id, b.channel_id) || a.day - b.day || byText(a.state, b.state)

/** A paused campaign with every field set: unicode, quotes and backslashes in its text, every JSON field. */
const richCampaign = (tenantId: string): CampaignRecord =>
  campaignRecord(tenantId, {
    name: "Promoção de Natal — Zoë 山田 🚀 \"quoted\" \\ back\nslash",
    status: "paused",
    throttle_reason: "chatapp_messaging_limit",
    channel_ids: [newId(), newId()],
    template_id: `tpl-${newId()}`,
    variable_values: ["Zoë", "山田 🚀", "\"x\" \\ y", ""],
    audience: { list_ids: [newId(), newId()], contact_ids: [newId()] },
    timezone: "America/Sao_Paulo",
    skip_duplicates: true,
    split_sending: { mode: "fixed", daily_batch: 250, send_time: "09:30" },
    send_at: "2026-11-27T12:00:00.000Z",
    warmup_acknowledged_at: "2026-11-26T10:15:30.123Z",
    warmup_acknowledged_audience: 12_345,
    audience_size: 12_001,
    next_run_at: "2026-11-28T09:30:00.000Z",
    started_at: "2026-11-27T12:00:00.001Z",
    paused_at: "2026-11-27T13:00:00.000Z",
    completed_at: "2026-11-29T00:00:00.000Z",
    created_at: "2026-11-26T10:15:30.123Z",
    updated_at: "2026-11-27T13:00:00.000Z"
  })

/** A recipient with every field set, handed and read. */
const richRecipient = (campaign: CampaignRecord, seq: number): CampaignRecipientRecord =>
  campaignRecipientRecord(campaign, seq, {
    channel_id: campaign.channel_ids[1] ?? campaign.channel_ids[0]!,
    state: "read",
    skip_reason: "duplicate — Zoë 山田",
    batch_day: 3,
    planned_at: "2026-11-29T09:30:00.000Z",
    handed_at: "2026-11-29T09:30:01.234Z",
    message_id: newId(),
    external_id: `wamid.${newId()}==`,
    error: "131047: \"re-engagement\" \\ 山田",
    updated_at: "2026-11-29T09:31:00.000Z"
  })

// Two tenants, each with a completed campaign on the same channel id, whose recipient 0 is the same
// contact id, handed and sent under the same external id, recipient 1 pending, and a batch.
const twoTenants = Effect.gen(function*() {
  const a = (yield* seedTenant).tenant
  const b = (yield* seedTenant).tenant
  const channelId = newId()
  const contactId = newId()
  const externalId = `wamid.${newId()}`
  const campaignOfA = campaignRecord(a.id, { status: "completed", channel_ids: [channelId], completed_at: at("11:30:00.000") })
  const campaignOfB = campaignRecord(b.id, { status: "completed", channel_ids: [channelId], completed_at: at("11:30:00.000") })
  yield* insertCampaigns([campaignOfA, campaignOfB])
  const sent = { contact_id: contactId, state: "sent", handed_at: at("11:00:00.000"), external_id: externalId } as const
  const recipientsOfA = [campaignRecipientRecord(campaignOfA, 0, sent), campaignRecipientRecord(campaignOfA, 1)]
  const recipientsOfB = [campaignRecipientRecord(campaignOfB, 0, sent), campaignRecipientRecord(campaignOfB, 1)]
  const batchOfA = campaignBatchRecord(campaignOfA, 0)
  const batchOfB = campaignBatchRecord(campaignOfB, 0)
  yield* store((s) =>
    Effect.all([
      s.insertRecipients([...recipientsOfA, ...recipientsOfB]),
      s.putBatches(a.id, campaignOfA.id, [batchOfA]),
      s.putBatches(b.id, campaignOfB.id, [batchOfB])
    ], { discard: true })
  )
  return { a, b, channelId, contactId, externalId, campaignOfA, campaignOfB, recipientsOfA, recipientsOfB, batchOfA, batchOfB }
})

/**
 * CampaignStore: every field of campaigns, recipients and batches round-trips; campaigns list newest
 * first; claims lease only due campaigns whose lease passed, oldest due first, never one campaign to
 * two claimers, and only the holder releases; recipients are stored once per seq, page by seq within
 * a state and planned time, and are replanned, found by external id and counted; batches are
 * replaced whole; the channel's history counts completed campaigns, recipients handed and distinct
 * contacts reached since an instant; nothing reaches another tenant's rows. Needs TenantStore and
 * AccountStore for the tenants rows belong to, and the Transactor for a claim held open.
 */
export const campaignStoreSuite: Suite<CampaignPorts, CampaignTables> = makeSuite({
  name: "CampaignStore",
  tables: ["campaigns", "campaignRecipients", "campaignBatches"],
  tests: (h) => {
    // Claims take campaigns of every tenant, so each test's due campaigns are put to rest afterwards
    // (nothing to do, lease dropped) and never crowd a later test's claim.
    afterEach(async () => {
      await h().run(store((s) =>
        Effect.flatMap(
          s.claimDue({ now: END_OF_TIME, leaseUntil: END_OF_TIME, limit: 10_000, holder: newHolder() }),
          (claims) =>
            Effect.forEach(claims, ({ campaign, holder }) =>
              Effect.andThen(
                s.update(campaign.tenant_id, { ...campaign, next_run_at: null }),
                s.release(campaign.tenant_id, campaign.id, holder)
              ), { discard: true })
        )
      ))
    })

    describe("campaigns", () => {
      it("stores every field, with unicode text and every JSON field, and reads it back unchanged by id and listing", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = richCampaign(tenant.id)
        await h().run(insertCampaigns([campaign]))

        expect(await h().stored.campaigns(tenant.id)).toEqual([campaign])
        expect(await getCampaign(h, tenant.id, campaign.id)).toEqual(campaign)
        expect(await listCampaigns(h, tenant.id, 10, 0)).toEqual({ items: [campaign], total: 1 })
      })

      it("stores a draft with every optional field null and empty lists, and a ramp without daily batch or send time", async () => {
        const { tenant } = await h().run(seedTenant)
        const draft = campaignRecord(tenant.id, { channel_ids: [], created_at: at("10:00:00.000") })
        const ramp = campaignRecord(tenant.id, {
          status: "scheduled",
          split_sending: { mode: "ramp", daily_batch: null, send_time: null },
          warmup_acknowledged_audience: 0,
          audience_size: 0,
          created_at: at("10:00:00.001")
        })
        await h().run(insertCampaigns([draft, ramp]))

        expect(await h().stored.campaigns(tenant.id)).toEqual([draft, ramp].sort(byId))
        expect(await getCampaign(h, tenant.id, draft.id)).toEqual(draft)
        expect(await getCampaign(h, tenant.id, ramp.id)).toEqual(ramp)
      })

      it("finds no campaign for an unknown id, and a tenant without campaigns lists none", async () => {
        const { tenant } = await h().run(seedTenant)
        expect(await getCampaign(h, tenant.id, newId())).toBeUndefined()
        expect(await listCampaigns(h, tenant.id, 10, 0)).toEqual({ items: [], total: 0 })
      })

      it("lists newest first, by id among campaigns created together, a window at a time, with the total", async () => {
        const { tenant } = await h().run(seedTenant)
        const oldest = campaignRecord(tenant.id, { created_at: at("09:00:00.000") })
        const together = [0, 1, 2].map(() => campaignRecord(tenant.id, { created_at: at("10:00:00.000") }))
        const newest = campaignRecord(tenant.id, { created_at: at("11:00:00.000") })
        await h().run(insertCampaigns([together[1]!, oldest, newest, together[0]!, together[2]!]))

        const expected = [newest, ...[...together].sort((x, y) => byText(y.id, x.id)), oldest]
        expect(await listCampaigns(h, tenant.id, 10, 0)).toEqual({ items: expected, total: 5 })
        expect(await listCampaigns(h, tenant.id, 2, 0)).toEqual({ items: expected.slice(0, 2), total: 5 })
        expect(await listCampaigns(h, tenant.id, 2, 2)).toEqual({ items: expected.slice(2, 4), total: 5 })
        expect(await listCampaigns(h, tenant.id, 2, 4)).toEqual({ items: expected.slice(4), total: 5 })
        expect(await listCampaigns(h, tenant.id, 2, 6)).toEqual({ items: [], total: 5 })
      })

      it("replaces every changeable field on update and reports that it did; an unknown campaign updates nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = campaignRecord(tenant.id)
        await h().run(insertCampaigns([before]))
        const after: CampaignRecord = { ...richCampaign(tenant.id), id: before.id, created_at: before.created_at }

        expect(await h().run(store((s) => s.update(tenant.id, after)))).toBe(true)
        expect(await h().stored.campaigns(tenant.id)).toEqual([after])
        expect(await getCampaign(h, tenant.id, before.id)).toEqual(after)

        const back: CampaignRecord = { ...before, updated_at: at("12:30:00.000") }
        expect(await h().run(store((s) => s.update(tenant.id, back)))).toBe(true)
        expect(await getCampaign(h, tenant.id, before.id)).toEqual(back)

        expect(await h().run(store((s) => s.update(tenant.id, campaignRecord(tenant.id))))).toBe(false)
        expect(await h().stored.campaigns(tenant.id)).toEqual([back])
      })
    })

    describe("transition", () => {
      const transition = (tenantId: string, id: string, expected: ReadonlyArray<CampaignStatus>, set: CampaignChanges) =>
        store((s) => s.transition(tenantId, id, { expected, set }))

      it("writes only the columns named, while the status is one expected, and reports that it did", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = richCampaign(tenant.id)
        await h().run(insertCampaigns([before]))
        const set = { status: "sending", throttle_reason: null, paused_at: null, next_run_at: NOW, updated_at: NOW } as const

        expect(await h().run(transition(tenant.id, before.id, ["scheduled", "paused"], set))).toBe(true)
        expect(await h().stored.campaigns(tenant.id)).toEqual([{ ...before, ...set }])
        // Nothing to set: whether the status is one expected, and nothing written.
        expect(await h().run(transition(tenant.id, before.id, ["sending"], {}))).toBe(true)
        expect(await h().run(transition(tenant.id, before.id, ["paused"], {}))).toBe(false)
        expect(await h().stored.campaigns(tenant.id)).toEqual([{ ...before, ...set }])
      })

      it("changes nothing when the status is none of those expected, for an unknown campaign, or with no status expected", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = richCampaign(tenant.id)
        await h().run(insertCampaigns([before]))
        const set = { status: "completed", completed_at: NOW, updated_at: NOW } as const

        expect(await h().run(transition(tenant.id, before.id, ["sending", "scheduled"], set))).toBe(false)
        expect(await h().run(transition(tenant.id, before.id, [], set))).toBe(false)
        expect(await h().run(transition(tenant.id, newId(), ["paused"], set))).toBe(false)
        expect(await h().stored.campaigns(tenant.id)).toEqual([before])
      })

      it("writes every changeable field it is given, the JSON ones and the flag too, leaving identity and creation time", async () => {
        const { tenant } = await h().run(seedTenant)
        const before = campaignRecord(tenant.id, { status: "scheduled", send_at: at("13:00:00.000"), next_run_at: at("13:00:00.000") })
        await h().run(insertCampaigns([before]))
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = richCampaign(tenant.id)

        expect(await h().run(transition(tenant.id, before.id, ["scheduled"], changes))).toBe(true)
        expect(await h().stored.campaigns(tenant.id)).toEqual([{ ...changes, id: before.id, tenant_id: tenant.id, created_at: before.created_at }])
        const cleared = { split_sending: null, skip_duplicates: false, variable_values: [], audience: { list_ids: [], contact_ids: [] } }
        expect(await h().run(transition(tenant.id, before.id, ["paused"], cleared))).toBe(true)
        expect(await getCampaign(h, tenant.id, before.id)).toMatchObject(cleared)
      })

      it("never changes another tenant's campaign, even under its id and status", async () => {
        const { a, b, campaignOfB } = await h().run(twoTenants)
        expect(await h().run(transition(a.id, campaignOfB.id, ["completed"], { status: "draft", name: "Hijacked" }))).toBe(false)
        expect(await h().run(transition(a.id, campaignOfB.id, ["completed"], {}))).toBe(false)
        expect(await h().stored.campaigns(b.id)).toEqual([campaignOfB])
      })

      it("keeps the lease over a write by its holder", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { status: "sending", audience_size: 10, next_run_at: NOW })
        await h().run(insertCampaigns([campaign]))
        const [claimed] = await claim(h)

        expect(await h().run(transition(tenant.id, campaign.id, ["sending"], { next_run_at: at("12:00:30.000") }))).toBe(true)
        expect(await claim(h, { now: at("12:01:00.000") })).toEqual([])
        expect(await release(h, tenant.id, campaign.id, claimed!.holder)).toBe(true)
      })

      // The race of issue 28: a POST /pause landing while a round runs used to be undone by the
      // round's whole-row save of the campaign it read before, and the campaign kept sending.
      it("keeps a pause made during a sending round: the round's write, expecting sending, changes nothing", async () => {
        const { tenant } = await h().run(seedTenant)
        const sending = campaignRecord(tenant.id, { status: "sending", audience_size: 500, started_at: at("11:00:00.000"), next_run_at: NOW })
        await h().run(insertCampaigns([sending]))
        const [claimed] = await claim(h)
        // The round is under way with the campaign as claimed; the user pauses.
        const pause = { status: "paused", throttle_reason: null, paused_at: at("12:00:01.000"), next_run_at: null, updated_at: at("12:00:01.000") } as const
        expect(await h().run(transition(tenant.id, sending.id, ["sending", "scheduled"], pause))).toBe(true)
        // The round ends: more is due now.
        const round = { throttle_reason: null, next_run_at: at("12:00:02.000"), updated_at: at("12:00:02.000") }
        expect(await h().run(transition(tenant.id, claimed!.campaign.id, ["sending"], round))).toBe(false)
        expect(await release(h, tenant.id, sending.id, claimed!.holder)).toBe(true)

        expect(await getCampaign(h, tenant.id, sending.id)).toEqual({ ...sending, ...pause })
        expect(await claim(h, { now: at("12:10:00.000") })).toEqual([])
      })

      it("lets one of two writers expecting the same status win; the other, waiting on it, changes nothing (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const sending = campaignRecord(tenant.id, { status: "sending", audience_size: 500, next_run_at: NOW })
        await h().run(insertCampaigns([sending]))
        const pause = { status: "paused", paused_at: at("12:00:01.000"), next_run_at: null } as const
        const complete = { status: "completed", completed_at: at("12:00:02.000"), next_run_at: null } as const

        const { whileHeld, after } = await h().run(contend({
          hold: transition(tenant.id, sending.id, ["sending"], pause),
          finish: () => Effect.void,
          contend: transition(tenant.id, sending.id, ["sending"], complete)
        }))
        expect(whileHeld).toEqual(Option.none())
        expect(after).toBe(false)
        expect(await getCampaign(h, tenant.id, sending.id)).toEqual({ ...sending, ...pause })
      })
    })

    describe("claimDue", () => {
      it("takes only campaigns due at the instant, of every tenant, oldest due first, up to the limit", async () => {
        const { tenant: a } = await h().run(seedTenant)
        const { tenant: b } = await h().run(seedTenant)
        const idle = campaignRecord(a.id)
        const later = campaignRecord(b.id, { next_run_at: at("12:00:00.001") })
        const first = campaignRecord(b.id, { next_run_at: at("11:00:00.000") })
        const second = campaignRecord(a.id, { next_run_at: at("11:30:00.000") })
        const onTheDot = campaignRecord(b.id, { next_run_at: NOW })
        await h().run(insertCampaigns([later, onTheDot, idle, second, first]))
        const holder = newHolder()

        expect(await claim(h, { limit: 2, holder })).toEqual([{ campaign: first, holder }, { campaign: second, holder }])
        expect(ids(await claim(h))).toEqual([onTheDot.id])
        expect(await claim(h)).toEqual([])
        expect(ids(await claim(h, { now: at("12:00:00.001"), leaseUntil: at("12:02:00.001") }))).toEqual([later.id])
        // Nothing to do is never due: the claim leaves the record as it is.
        expect(await h().stored.campaigns(a.id)).toEqual([idle, second].sort(byId))
      })

      it("leases what it takes: no claim takes it again until the lease has passed, and only the holder releases it", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { status: "sending", next_run_at: at("11:59:00.000") })
        await h().run(insertCampaigns([campaign]))
        const first = newHolder()
        const second = newHolder()

        expect(await claim(h, { holder: first })).toEqual([{ campaign, holder: first }])
        expect(await claim(h, { now: at("12:01:59.999"), leaseUntil: at("12:03:59.999") })).toEqual([])
        // Its lease passed: taken again under a new lease and holder; the first holder has lost it.
        expect(await claim(h, { now: LEASE_UNTIL, leaseUntil: at("12:04:00.000"), holder: second }))
          .toEqual([{ campaign, holder: second }])
        expect(await release(h, tenant.id, campaign.id, first)).toBe(false)
        expect(await claim(h, { now: at("12:03:59.999"), leaseUntil: at("12:06:00.000") })).toEqual([])

        expect(await release(h, tenant.id, campaign.id, second)).toBe(true)
        expect(await release(h, tenant.id, campaign.id, second)).toBe(false)
        // Released, and still due: the next claim takes it at once.
        expect(ids(await claim(h, { now: at("12:03:00.000"), leaseUntil: at("12:05:00.000") }))).toEqual([campaign.id])
        expect(await h().stored.campaigns(tenant.id)).toEqual([campaign])
      })

      it("refuses a release by a holder that never held the campaign, and of an unknown campaign", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { next_run_at: NOW })
        await h().run(insertCampaigns([campaign]))
        expect(await release(h, tenant.id, campaign.id, newHolder())).toBe(false)

        const [claimed] = await claim(h)
        expect(await release(h, tenant.id, campaign.id, newHolder())).toBe(false)
        expect(await release(h, tenant.id, newId(), claimed!.holder)).toBe(false)
        expect(await claim(h, { now: at("12:01:00.000") })).toEqual([])
        expect(await release(h, tenant.id, campaign.id, claimed!.holder)).toBe(true)
      })

      it("keeps the lease over an update by its holder, and takes the campaign at its new next run", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { status: "scheduled", next_run_at: NOW })
        await h().run(insertCampaigns([campaign]))
        const [claimed] = await claim(h)
        const started: CampaignRecord = { ...campaign, status: "sending", started_at: NOW, next_run_at: at("12:00:30.000") }

        expect(await h().run(store((s) => s.update(tenant.id, started)))).toBe(true)
        expect(await claim(h, { now: at("12:01:00.000") })).toEqual([])
        expect(await release(h, tenant.id, campaign.id, claimed!.holder)).toBe(true)
        expect(await claim(h, { now: at("12:00:29.999") })).toEqual([])
        expect((await claim(h, { now: at("12:00:30.000") })).map((c) => c.campaign)).toEqual([started])
      })

      it("gives a second claim only what the first left", async () => {
        const { tenant } = await h().run(seedTenant)
        const due = Array.from({ length: 5 }, (_, i) => campaignRecord(tenant.id, { next_run_at: at(`11:00:0${i}.000`) }))
        await h().run(insertCampaigns(due))

        expect(ids(await claim(h, { limit: 3 }))).toEqual(due.slice(0, 3).map((c) => c.id))
        expect(ids(await claim(h, { limit: 3 }))).toEqual(due.slice(3).map((c) => c.id))
        expect(await claim(h)).toEqual([])
      })

      it("gives two concurrent claims disjoint campaigns (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        for (let round = 0; round < 5; round++) {
          const due = Array.from({ length: 40 }, () => campaignRecord(tenant.id, { next_run_at: NOW }))
          await h().run(insertCampaigns(due))

          const [a, b] = await h().run(Effect.all([
            store((s) => s.claimDue({ now: NOW, leaseUntil: LEASE_UNTIL, limit: 30, holder: newHolder() })),
            store((s) => s.claimDue({ now: NOW, leaseUntil: LEASE_UNTIL, limit: 30, holder: newHolder() }))
          ], { concurrency: 2 }))
          const taken = [...ids(a), ...ids(b)]
          expect(new Set(taken).size).toBe(taken.length)
          expect(taken.sort()).toEqual(due.map((c) => c.id).sort())
          await h().run(store((s) =>
            Effect.forEach([...a, ...b], ({ campaign, holder }) =>
              Effect.andThen(s.update(tenant.id, { ...campaign, next_run_at: null }), s.release(tenant.id, campaign.id, holder)), {
              discard: true
            })
          ))
        }
      })

      it("does not wait for a claim in another open transaction, and takes other campaigns (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const due = Array.from({ length: 6 }, (_, i) => campaignRecord(tenant.id, { next_run_at: at(`10:00:0${i}.000`) }))
        await h().run(insertCampaigns(due))
        const claimFive = store((s) => s.claimDue({ now: NOW, leaseUntil: LEASE_UNTIL, limit: 5, holder: newHolder() }))

        const { whileHeld, after } = await h().run(contend({ hold: claimFive, finish: () => Effect.void, contend: claimFive }))

        expect(Option.map(whileHeld, ids)).toEqual(Option.some([due[5]!.id]))
        expect(ids(after)).toEqual([due[5]!.id])
      })
    })

    describe("recipients", () => {
      it("stores every field of a recipient, and a skipped one no channel reaches, and reads them back unchanged", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = richCampaign(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const rich = richRecipient(campaign, 7)
        const skipped = campaignRecipientRecord(campaign, 8, { channel_id: null, state: "skipped", skip_reason: "unreachable" })
        await insertRecipients(h, [skipped, rich])

        expect(await h().stored.campaignRecipients(tenant.id)).toEqual([rich, skipped])
        expect(await recipientsIn(h, tenant.id, campaign.id, "read")).toEqual([rich])
        expect(await recipientsIn(h, tenant.id, campaign.id, "skipped")).toEqual([skipped])
        expect(await h().run(store((s) => s.findRecipientByExternalId(tenant.id, rich.channel_id!, rich.external_id!))))
          .toEqual(Option.some(rich))
      })

      it("stores a seq once: inserting it again leaves the first as it is and adds only the new ones", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const first = [0, 1, 2].map((seq) => campaignRecipientRecord(campaign, seq))
        await insertRecipients(h, first)
        const again = [1, 2, 3].map((seq) => campaignRecipientRecord(campaign, seq, { state: "skipped", skip_reason: "duplicate" }))
        await insertRecipients(h, again)
        await insertRecipients(h, [])

        expect(await h().stored.campaignRecipients(tenant.id)).toEqual([...first, again[2]!])
      })

      it("stores 2,500 recipients in one call and again across the chunks' boundaries, each seq once", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const recipients = Array.from({ length: 2_500 }, (_, seq) => campaignRecipientRecord(campaign, seq))
        await insertRecipients(h, recipients)
        expect(await storedRecipientsOf(h, campaign)).toEqual(recipients)

        // Half already stored, half new, in one call: the stored half is kept, the new half added.
        const overlap = Array.from({ length: 1_000 }, (_, i) => campaignRecipientRecord(campaign, 2_000 + i, { batch_day: 9 }))
        await insertRecipients(h, overlap)
        const expected = [...recipients, ...overlap.slice(500)]
        expect(await storedRecipientsOf(h, campaign)).toEqual(expected)
        expect(await h().run(store((s) => s.counts(tenant.id, campaign.id)))).toEqual({ byState: { pending: 3_000 }, skippedByReason: {} })
        expect(seqs(await recipientsIn(h, tenant.id, campaign.id, "pending"))).toEqual(expected.map((r) => r.seq))
      })

      it("pages recipients through one channel only when a channel is given", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const a = newId()
        const b = newId()
        const recipients = Array.from({ length: 9 }, (_, seq) => campaignRecipientRecord(campaign, seq, { channel_id: seq % 3 === 0 ? b : a }))
        await insertRecipients(h, recipients)
        const through = (channelId: string, limit: number) =>
          h().run(store((s) => s.recipientsIn(tenant.id, campaign.id, "pending", { plannedBy: null, afterSeq: null, limit, channelId })))
        expect(seqs(await through(b, 10))).toEqual([0, 3, 6])
        expect(seqs(await through(a, 4))).toEqual([1, 2, 4, 5])
      })

      it("knows whether the campaign has a recipient for a contact, skipped ones too, and no other campaign's", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        const other = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign, other]))
        const pending = campaignRecipientRecord(campaign, 0)
        const skipped = campaignRecipientRecord(campaign, 1, { channel_id: null, state: "skipped", skip_reason: "opted_out" })
        const elsewhere = campaignRecipientRecord(other, 0)
        await insertRecipients(h, [pending, skipped, elsewhere])
        const has = (campaignId: string, contactId: string) => h().run(store((s) => s.hasRecipient(tenant.id, campaignId, contactId)))

        expect(await has(campaign.id, pending.contact_id)).toBe(true)
        expect(await has(campaign.id, skipped.contact_id)).toBe(true)
        expect(await has(campaign.id, elsewhere.contact_id)).toBe(false)
        expect(await has(other.id, pending.contact_id)).toBe(false)
        expect(await has(campaign.id, newId())).toBe(false)
      })

      it("pages recipients in a state by seq, planned at or before an instant (inclusive) when given, none of other campaigns", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        const other = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign, other]))
        const planned = (seq: number) =>
          seq <= 3 ? at("10:00:00.000") : seq <= 6 ? at("11:00:00.000") : at("12:00:00.000")
        const recipients = Array.from({ length: 10 }, (_, i) => {
          const seq = i + 1
          return campaignRecipientRecord(campaign, seq, {
            planned_at: planned(seq),
            state: seq === 7 ? "sent" : seq === 8 ? "skipped" : "pending",
            ...(seq === 8 ? { channel_id: null, skip_reason: "unsubscribed" } : {})
          })
        })
        const ofOther = [1, 2, 11].map((seq) => campaignRecipientRecord(other, seq, { planned_at: at("09:00:00.000") }))
        await insertRecipients(h, [...ofOther, ...[...recipients].reverse()])
        const pending = recipients.filter((r) => r.state === "pending")
        const page = (p: Parameters<typeof recipientsIn>[4]) => recipientsIn(h, tenant.id, campaign.id, "pending", p)

        expect(await page({})).toEqual(pending)
        expect(seqs(await page({ limit: 3 }))).toEqual([1, 2, 3])
        expect(seqs(await page({ afterSeq: 3, limit: 3 }))).toEqual([4, 5, 6])
        expect(seqs(await page({ afterSeq: 6, limit: 3 }))).toEqual([9, 10])
        expect(await page({ afterSeq: 10, limit: 3 })).toEqual([])
        expect(seqs(await page({ afterSeq: 0 }))).toEqual([1, 2, 3, 4, 5, 6, 9, 10])

        expect(seqs(await page({ plannedBy: at("11:00:00.000") }))).toEqual([1, 2, 3, 4, 5, 6])
        expect(seqs(await page({ plannedBy: at("10:59:59.999") }))).toEqual([1, 2, 3])
        expect(seqs(await page({ plannedBy: at("11:00:00.000"), afterSeq: 4, limit: 1 }))).toEqual([5])
        expect(await page({ plannedBy: at("09:59:59.999") })).toEqual([])

        expect(await recipientsIn(h, tenant.id, campaign.id, "sent")).toEqual([recipients[6]])
        expect(await recipientsIn(h, tenant.id, campaign.id, "skipped")).toEqual([recipients[7]])
        expect(await recipientsIn(h, tenant.id, campaign.id, "failed")).toEqual([])
        expect(seqs(await recipientsIn(h, tenant.id, other.id, "pending"))).toEqual([1, 2, 11])
      })

      it("replaces every field of one recipient on update, leaving its neighbours and another campaign's same seq alone", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = richCampaign(tenant.id)
        const other = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign, other]))
        const before = [0, 1, 2].map((seq) => campaignRecipientRecord(campaign, seq))
        const sameSeq = campaignRecipientRecord(other, 1)
        await insertRecipients(h, [...before, sameSeq])

        const handed = { ...richRecipient(campaign, 1), contact_id: before[1]!.contact_id }
        await h().run(store((s) => s.updateRecipient(handed)))
        expect(await storedRecipientsOf(h, campaign)).toEqual([before[0], handed, before[2]])
        expect(await storedRecipientsOf(h, other)).toEqual([sameSeq])

        // Back to pending, its hand-over undone: every field can go back to null.
        const undone: CampaignRecipientRecord = { ...before[1]!, updated_at: at("12:00:00.000") }
        await h().run(store((s) => s.updateRecipient(undone)))
        expect(await storedRecipientsOf(h, campaign)).toEqual([before[0], undone, before[2]])

        // An unknown seq: nothing is written.
        await h().run(store((s) => s.updateRecipient(campaignRecipientRecord(campaign, 99))))
        expect(await storedRecipientsOf(h, campaign)).toEqual([before[0], undone, before[2]])
      })

      it("replans many pending recipients at once, across statements, leaving those no longer pending and those not in the plan", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const pending = Array.from({ length: 1_200 }, (_, seq) => campaignRecipientRecord(campaign, seq))
        const sent = campaignRecipientRecord(campaign, 1_200, { state: "sent", handed_at: at("10:00:00.000") })
        const unplanned = campaignRecipientRecord(campaign, 1_201)
        await insertRecipients(h, [...pending, sent, unplanned])
        const dayOne = "2026-11-27T09:30:00.000Z"
        const dayTwo = "2026-11-28T09:30:00.000Z"
        const plan = [
          ...pending.map((r) => (r.seq < 700 ? { seq: r.seq, batch_day: 1, planned_at: dayOne } : { seq: r.seq, batch_day: 2, planned_at: dayTwo })),
          { seq: sent.seq, batch_day: 1, planned_at: dayOne },
          { seq: 5_000, batch_day: 1, planned_at: dayOne }
        ]

        await h().run(store((s) => s.replanRecipients(tenant.id, campaign.id, plan)))
        await h().run(store((s) => s.replanRecipients(tenant.id, campaign.id, [])))

        expect(await storedRecipientsOf(h, campaign)).toEqual([
          ...pending.map((r) => (r.seq < 700 ? { ...r, batch_day: 1, planned_at: dayOne } : { ...r, batch_day: 2, planned_at: dayTwo })),
          sent,
          unplanned
        ])
        // Due by day one: the earliest planned first (the unplanned one keeps its earlier time), then by seq.
        expect(seqs(await recipientsIn(h, tenant.id, campaign.id, "pending", { plannedBy: dayOne })))
          .toEqual([unplanned.seq, ...pending.slice(0, 700).map((r) => r.seq)])
      })

      it("finds a recipient by the operator's id on its channel, and none on another channel or for an unknown id", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { channel_ids: [newId(), newId()] })
        await h().run(insertCampaigns([campaign]))
        const externalId = `wamid.${newId()}`
        const onFirst = campaignRecipientRecord(campaign, 0, { state: "sent", handed_at: NOW, external_id: externalId })
        const onSecond = campaignRecipientRecord(campaign, 1, { channel_id: campaign.channel_ids[1]!, state: "delivered", handed_at: NOW, external_id: externalId })
        const notSent = campaignRecipientRecord(campaign, 2)
        await insertRecipients(h, [onFirst, onSecond, notSent])
        const find = (channelId: string, id: string) =>
          h().run(store((s) => s.findRecipientByExternalId(tenant.id, channelId, id))).then(Option.getOrUndefined)

        expect(await find(campaign.channel_ids[0]!, externalId)).toEqual(onFirst)
        expect(await find(campaign.channel_ids[1]!, externalId)).toEqual(onSecond)
        expect(await find(newId(), externalId)).toBeUndefined()
        expect(await find(campaign.channel_ids[0]!, `wamid.${newId()}`)).toBeUndefined()
      })

      it("counts a campaign's recipients by state and its skipped ones by reason", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        const other = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign, other]))
        const states: ReadonlyArray<readonly [RecipientState, string | null]> = [
          ["pending", null], ["pending", null], ["pending", null], ["sending", null], ["sent", null], ["sent", null],
          ["delivered", null], ["read", null], ["failed", null],
          ["skipped", "unsubscribed"], ["skipped", "unsubscribed"], ["skipped", "opted_out"], ["skipped", "duplicate"]
        ]
        await insertRecipients(h, [
          ...states.map(([state, skip_reason], seq) =>
            campaignRecipientRecord(campaign, seq, { state, skip_reason, ...(skip_reason === null ? {} : { channel_id: null }) })),
          campaignRecipientRecord(other, 0, { state: "skipped", skip_reason: "unreachable", channel_id: null })
        ])

        expect(await h().run(store((s) => s.counts(tenant.id, campaign.id)))).toEqual({
          byState: { pending: 3, sending: 1, sent: 2, delivered: 1, read: 1, failed: 1, skipped: 4 },
          skippedByReason: { unsubscribed: 2, opted_out: 1, duplicate: 1 }
        })
        expect(await h().run(store((s) => s.counts(tenant.id, newId())))).toEqual({ byState: {}, skippedByReason: {} })
      })

      it("counts recipients per channel, batch day and state, leaving out those no channel reaches", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { channel_ids: [newId(), newId()] })
        const other = campaignRecord(tenant.id, { channel_ids: campaign.channel_ids })
        await h().run(insertCampaigns([campaign, other]))
        const [first, second] = campaign.channel_ids as [string, string]
        const rows: ReadonlyArray<readonly [string | null, number, RecipientState]> = [
          [first, 0, "pending"], [first, 0, "pending"], [first, 0, "sent"], [first, 1, "pending"],
          [second, 0, "failed"], [second, 2, "delivered"], [null, 0, "skipped"], [null, 0, "skipped"]
        ]
        await insertRecipients(h, [
          ...rows.map(([channel_id, batch_day, state], seq) =>
            campaignRecipientRecord(campaign, seq, { channel_id, batch_day, state, skip_reason: channel_id === null ? "opted_out" : null })),
          campaignRecipientRecord(other, 0)
        ])

        const counts = await h().run(store((s) => s.batchCounts(tenant.id, campaign.id)))
        const expected: ReadonlyArray<BatchCount> = [
          { channel_id: first, day: 0, state: "pending", n: 2 },
          { channel_id: first, day: 0, state: "sent", n: 1 },
          { channel_id: first, day: 1, state: "pending", n: 1 },
          { channel_id: second, day: 0, state: "failed", n: 1 },
          { channel_id: second, day: 2, state: "delivered", n: 1 }
        ]
        expect([...counts].sort(byBatch)).toEqual([...expected].sort(byBatch))
        expect(await h().run(store((s) => s.batchCounts(tenant.id, newId())))).toEqual([])
      })
    })

    describe("findRecipientsByExternalIds", () => {
      it("finds the recipients of the external ids on the channel, once each, leaving out unknown ids, other channels' and other tenants'", async () => {
        const { a, b, channelId, externalId, recipientsOfA, recipientsOfB } = await h().run(twoTenants)
        const later = campaignRecord(a.id, { channel_ids: [channelId] })
        await h().run(insertCampaigns([later]))
        const sent = { state: "sent", handed_at: at("11:10:00.000") } as const
        const here = campaignRecipientRecord(later, 0, { ...sent, external_id: `wamid.${newId()}` })
        const elsewhere = campaignRecipientRecord(later, 1, { ...sent, channel_id: newId(), external_id: here.external_id })
        await insertRecipients(h, [here, elsewhere])

        const asked = [externalId, here.external_id!, externalId, "wamid.unknown"]
        expect(await findRecipientsByExternalIds(h, a.id, channelId, asked)).toEqual([recipientsOfA[0]!, here].sort(byRecipient))
        expect(await findRecipientsByExternalIds(h, b.id, channelId, asked)).toEqual([recipientsOfB[0]])
        expect(await findRecipientsByExternalIds(h, a.id, newId(), asked)).toEqual([])
        expect(await findRecipientsByExternalIds(h, a.id, channelId, [])).toEqual([])
      })

      it("finds 1,200 recipients in one call, by awkward and JSON-looking external ids too", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const recipients = Array.from({ length: 1_200 }, (_, seq) =>
          campaignRecipientRecord(campaign, seq, {
            state: "sent",
            handed_at: at("11:00:00.000"),
            external_id: seq < AWKWARD_TEXTS.length ? AWKWARD_TEXTS[seq]! : `wamid.${seq}`
          }))
        await insertRecipients(h, recipients)

        const asked = [...recipients.map((r) => r.external_id!), "wamid.unknown", `{"a": 1}`]
        expect(await findRecipientsByExternalIds(h, tenant.id, campaign.channel_ids[0]!, asked)).toEqual(recipients)
      })
    })

    describe("moveRecipients", () => {
      it("moves each recipient still in the state read, writing only state, error and time, and resolves to those moved", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const handed = { state: "sending", handed_at: at("11:00:00.000"), message_id: newId() } as const
        const [toSent, toFailed, movedMeanwhile] = [0, 1, 2].map((seq) => campaignRecipientRecord(campaign, seq, { ...handed, external_id: `wamid.${seq}` }))
        await insertRecipients(h, [toSent!, toFailed!, movedMeanwhile!])
        const meanwhile: CampaignRecipientRecord = { ...movedMeanwhile!, state: "failed", error: "timed out", updated_at: at("11:30:00.000") }
        await h().run(store((s) => s.updateRecipient(meanwhile)))
        const sent = { state: "sent", error: null, updated_at: at("12:00:00.000") } as const
        const failed = { state: "failed", error: `{"code":131026,"title":"Zoë's \"undeliverable\" 🚫"}`, updated_at: at("12:00:01.000") } as const

        const moved = await h().run(moveRecipients(tenant.id, [moveOf(toSent!, sent), moveOf(toFailed!, failed), moveOf(movedMeanwhile!, sent)]))
        expect(moved).toEqual(new Set([keyOf(toSent!), keyOf(toFailed!)]))
        expect(await storedRecipientsOf(h, campaign)).toEqual([{ ...toSent!, ...sent }, { ...toFailed!, ...failed }, meanwhile])
      })

      it("moves a recipient given twice in one batch once, to one of its moves", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const [twice, rivals] = [0, 1].map((seq) => campaignRecipientRecord(campaign, seq, { state: "sending", handed_at: at("11:00:00.000") }))
        await insertRecipients(h, [twice!, rivals!])
        const sent = { state: "sent", error: null, updated_at: at("12:00:00.000") } as const
        const failed = { state: "failed", error: "131026", updated_at: at("12:00:01.000") } as const

        const moved = await h().run(moveRecipients(tenant.id, [moveOf(twice!, sent), moveOf(rivals!, sent), moveOf(twice!, sent), moveOf(rivals!, failed)]))
        expect(moved).toEqual(new Set([keyOf(twice!), keyOf(rivals!)]))
        const [storedTwice, storedRivals] = await storedRecipientsOf(h, campaign)
        expect(storedTwice).toEqual({ ...twice!, ...sent })
        expect([{ ...rivals!, ...sent }, { ...rivals!, ...failed }]).toContainEqual(storedRivals)
      })

      it("never moves another tenant's recipients, and moves nothing for an empty batch", async () => {
        const { a, b, recipientsOfA, recipientsOfB } = await h().run(twoTenants)
        const sending = { state: "sending", error: null, updated_at: at("12:00:00.000") } as const

        expect(await h().run(moveRecipients(a.id, recipientsOfB.map((r) => moveOf(r, sending))))).toEqual(new Set())
        expect(await h().run(moveRecipients(a.id, []))).toEqual(new Set())
        expect(await h().stored.campaignRecipients(b.id)).toEqual(recipientsOfB)
        expect(await h().stored.campaignRecipients(a.id)).toEqual(recipientsOfA)
      })

      it("moves 1,200 recipients in one call, with awkward and JSON-looking errors kept as text", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const recipients = Array.from({ length: 1_200 }, (_, seq) => campaignRecipientRecord(campaign, seq, { state: "sending", handed_at: at("11:00:00.000") }))
        await insertRecipients(h, recipients)
        const toOf = (seq: number) =>
          seq % 3 === 0
            ? { state: "failed", error: AWKWARD_TEXTS[seq % AWKWARD_TEXTS.length]!, updated_at: at("12:00:01.000") } as const
            : { state: "sent", error: null, updated_at: at("12:00:00.000") } as const

        const moved = await h().run(moveRecipients(tenant.id, recipients.map((r) => moveOf(r, toOf(r.seq)))))
        expect(moved).toEqual(new Set(recipients.map(keyOf)))
        expect(await storedRecipientsOf(h, campaign)).toEqual(recipients.map((r) => ({ ...r, ...toOf(r.seq) })))
      })

      it("loses to a move in another open transaction: leaves that writer's state and reports it not moved (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const [contested, other] = [0, 1].map((seq) => campaignRecipientRecord(campaign, seq, { state: "sending", handed_at: at("11:00:00.000") }))
        await insertRecipients(h, [contested!, other!])
        const sent = { state: "sent", error: null, updated_at: at("12:00:00.000") } as const
        const failed = { state: "failed", error: "timed out", updated_at: at("12:00:01.000") } as const

        const { whileHeld, after } = await h().run(contend({
          hold: moveRecipients(tenant.id, [moveOf(contested!, sent)]),
          finish: () => Effect.void,
          contend: moveRecipients(tenant.id, [moveOf(contested!, failed), moveOf(other!, failed)])
        }))
        // Answering before the other committed, it would have moved the recipient under that writer.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([keyOf(other!)]))
        expect(await storedRecipientsOf(h, campaign)).toEqual([{ ...contested!, ...sent }, { ...other!, ...failed }])
      })
    })

    describe("batches", () => {
      it("replaces a campaign's batches whole and reads them by channel id, then day, leaving other campaigns' alone", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { channel_ids: [newId(), newId()] })
        const other = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign, other]))
        const [x, y] = [...campaign.channel_ids].sort(byText) as [string, string]
        const batch = (channel_id: string, day: number, planned_size: number) =>
          campaignBatchRecord(campaign, day, { channel_id, planned_size, starts_at: `2026-12-${String(day + 1).padStart(2, "0")}T09:30:00.000Z` })
        const plan = [batch(y, 1, 500), batch(x, 1, 1_000), batch(y, 0, 250), batch(x, 0, 250), batch(x, 10, 7)]
        const ofOther = campaignBatchRecord(other, 0)
        await h().run(store((s) =>
          Effect.andThen(s.putBatches(tenant.id, campaign.id, plan), s.putBatches(tenant.id, other.id, [ofOther]))
        ))

        const ordered = [batch(x, 0, 250), batch(x, 1, 1_000), batch(x, 10, 7), batch(y, 0, 250), batch(y, 1, 500)]
        expect(await h().run(store((s) => s.batchesOf(tenant.id, campaign.id)))).toEqual(ordered)

        const replan = [batch(x, 1, 900), batch(x, 2, 100)]
        await h().run(store((s) => s.putBatches(tenant.id, campaign.id, replan)))
        expect(await h().run(store((s) => s.batchesOf(tenant.id, campaign.id)))).toEqual(replan)

        await h().run(store((s) => s.putBatches(tenant.id, campaign.id, [])))
        expect(await h().run(store((s) => s.batchesOf(tenant.id, campaign.id)))).toEqual([])
        expect(await h().stored.campaignBatches(tenant.id)).toEqual([ofOther])
        expect(await h().run(store((s) => s.batchesOf(tenant.id, other.id)))).toEqual([ofOther])
      })
    })

    describe("the channel's history", () => {
      it("counts the tenant's completed campaigns through the channel, but the one asked about", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = newId()
        const otherChannel = newId()
        const completed = (channel_ids: ReadonlyArray<string>) =>
          campaignRecord(tenant.id, { status: "completed", channel_ids, completed_at: at("11:00:00.000") })
        const counted = [completed([channelId]), completed([channelId]), completed([otherChannel, channelId])]
        const asked = completed([channelId])
        await h().run(insertCampaigns([
          ...counted,
          asked,
          completed([otherChannel]),
          completed([]),
          campaignRecord(tenant.id, { status: "sending", channel_ids: [channelId] }),
          campaignRecord(tenant.id, { status: "paused", channel_ids: [channelId] })
        ]))
        const through = (channel: string, except: string) => h().run(store((s) => s.completedThrough(tenant.id, channel, except)))

        expect(await through(channelId, asked.id)).toBe(3)
        expect(await through(channelId, newId())).toBe(4)
        expect(await through(otherChannel, asked.id)).toBe(2)
        expect(await through(newId(), asked.id)).toBe(0)
      })

      it("matches the channel id exactly: not by case, nor by a LIKE wildcard, nor as part of another id", async () => {
        const { tenant } = await h().run(seedTenant)
        // Letters in both cases of it tell an exact match from a case-blind one (the tenant is new: no other campaign has it).
        const base = "chan_a1b2c3d4"
        const completed = (channel_ids: ReadonlyArray<string>) => campaignRecord(tenant.id, { status: "completed", channel_ids })
        await h().run(insertCampaigns([
          completed([base.toUpperCase()]),
          completed([base.replace("_", "x")]),
          completed([`${base}-2`]),
          completed([`x${base}`]),
          completed([`%${base}`]),
          completed([base])
        ]))
        const through = (channel: string) => h().run(store((s) => s.completedThrough(tenant.id, channel, newId())))

        expect(await through(base)).toBe(1)
        expect(await through(`%${base}`)).toBe(1)
        expect(await through(base.toUpperCase())).toBe(1)
        expect(await through(base.replace("chan", "CHAN"))).toBe(0)
        expect(await through(`${base}%`)).toBe(0)
      })

      it("counts the recipients every campaign of the tenant handed through the channel, whatever became of them", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = newId()
        const one = campaignRecord(tenant.id, { channel_ids: [channelId, newId()] })
        const two = campaignRecord(tenant.id, { channel_ids: [channelId] })
        await h().run(insertCampaigns([one, two]))
        const handed = (campaign: CampaignRecord, seq: number, state: RecipientState, channel_id = channelId) =>
          campaignRecipientRecord(campaign, seq, { channel_id, state, handed_at: at("10:00:00.000") })
        await insertRecipients(h, [
          handed(one, 0, "sending"), handed(one, 1, "sent"), handed(one, 2, "delivered"), handed(one, 3, "read"),
          handed(one, 4, "failed"), handed(one, 5, "sent", one.channel_ids[1]!),
          campaignRecipientRecord(one, 6),
          campaignRecipientRecord(one, 7, { state: "failed", error: "no template" }),
          campaignRecipientRecord(one, 8, { channel_id: null, state: "skipped", skip_reason: "opted_out" }),
          handed(two, 0, "read")
        ])
        const sent = (channel: string) => h().run(store((s) => s.sentThrough(tenant.id, channel)))

        expect(await sent(channelId)).toBe(6)
        expect(await sent(one.channel_ids[1]!)).toBe(1)
        expect(await sent(newId())).toBe(0)
      })

      it("counts the distinct contacts handed through the channel since an instant (inclusive), and which of some are among them", async () => {
        const { tenant } = await h().run(seedTenant)
        const channelId = newId()
        const one = campaignRecord(tenant.id, { channel_ids: [channelId, newId()] })
        const two = campaignRecord(tenant.id, { channel_ids: [channelId] })
        await h().run(insertCampaigns([one, two]))
        const since = at("10:00:00.000")
        const [onTheDot, twice, before, pending, elsewhere] = Array.from({ length: 5 }, newId) as [string, string, string, string, string]
        await insertRecipients(h, [
          campaignRecipientRecord(one, 0, { contact_id: onTheDot, state: "sent", handed_at: since }),
          campaignRecipientRecord(one, 1, { contact_id: twice, state: "delivered", handed_at: at("11:00:00.000") }),
          campaignRecipientRecord(two, 0, { contact_id: twice, state: "failed", handed_at: at("11:30:00.000") }),
          campaignRecipientRecord(one, 2, { contact_id: before, state: "read", handed_at: at("09:59:59.999") }),
          campaignRecipientRecord(one, 3, { contact_id: pending }),
          campaignRecipientRecord(one, 4, { contact_id: elsewhere, channel_id: one.channel_ids[1]!, state: "sent", handed_at: at("10:30:00.000") })
        ])
        const reached = (from: string, contactIds: ReadonlyArray<string>) =>
          h().run(store((s) => s.reachedSince(tenant.id, channelId, from, contactIds)))

        expect(await reached(since, [before, twice, newId(), onTheDot, twice, elsewhere, pending]))
          .toEqual({ distinct: 2, already: [twice, onTheDot] })
        expect(await reached(since, [])).toEqual({ distinct: 2, already: [] })
        expect(await reached(at("10:00:00.001"), [onTheDot, twice])).toEqual({ distinct: 1, already: [twice] })
        expect(await reached(at("09:59:59.999"), [before])).toEqual({ distinct: 3, already: [before] })
        expect(await reached(at("11:30:00.001"), [twice])).toEqual({ distinct: 0, already: [] })
        // More contact ids than one statement asks about.
        const many = [...Array.from({ length: 1_200 }, newId), onTheDot, ...Array.from({ length: 300 }, newId), twice]
        expect(await reached(since, many)).toEqual({ distinct: 2, already: [onTheDot, twice] })
      })
    })

    describe("tenant isolation", () => {
      it("returns nothing of another tenant's campaigns, by id or listing, and refuses to update them", async () => {
        const { a, b, campaignOfA, campaignOfB } = await h().run(twoTenants)

        expect(await getCampaign(h, a.id, campaignOfB.id)).toBeUndefined()
        expect(await listCampaigns(h, a.id, 10, 0)).toEqual({ items: [campaignOfA], total: 1 })
        const hijack: CampaignRecord = { ...campaignOfB, name: "Hijacked", status: "sending", next_run_at: NOW }
        expect(await h().run(store((s) => s.update(a.id, hijack)))).toBe(false)
        expect(await h().run(store((s) => s.update(a.id, { ...hijack, tenant_id: a.id })))).toBe(false)
        expect(await h().stored.campaigns(b.id)).toEqual([campaignOfB])
        expect(await h().stored.campaigns(a.id)).toEqual([campaignOfA])
      })

      it("refuses to release another tenant's campaign, even with its holder", async () => {
        const { a, b, campaignOfB } = await h().run(twoTenants)
        const due: CampaignRecord = { ...campaignOfB, status: "sending", next_run_at: NOW }
        expect(await h().run(store((s) => s.update(b.id, due)))).toBe(true)
        const [claimed] = await claim(h)
        expect(claimed?.campaign).toEqual(due)

        expect(await release(h, a.id, campaignOfB.id, claimed!.holder)).toBe(false)
        expect(await claim(h, { now: at("12:01:00.000") })).toEqual([])
        expect(await release(h, b.id, campaignOfB.id, claimed!.holder)).toBe(true)
      })

      it("returns nothing of another tenant's recipients and batches, by contact, page, external id or count", async () => {
        const { a, b, campaignOfA, campaignOfB, channelId, contactId, externalId, recipientsOfA, recipientsOfB } = await h().run(twoTenants)

        expect(await h().run(store((s) => s.hasRecipient(a.id, campaignOfB.id, contactId)))).toBe(false)
        expect(await recipientsIn(h, a.id, campaignOfB.id, "pending")).toEqual([])
        expect(await recipientsIn(h, a.id, campaignOfB.id, "sent")).toEqual([])
        // Both hold a recipient on the same channel id under the same external id: each finds its own.
        expect(await h().run(store((s) => s.findRecipientByExternalId(a.id, channelId, externalId)))).toEqual(Option.some(recipientsOfA[0]))
        expect(await h().run(store((s) => s.findRecipientByExternalId(b.id, channelId, externalId)))).toEqual(Option.some(recipientsOfB[0]))
        expect(await h().run(store((s) => s.counts(a.id, campaignOfB.id)))).toEqual({ byState: {}, skippedByReason: {} })
        expect(await h().run(store((s) => s.batchCounts(a.id, campaignOfB.id)))).toEqual([])
        expect(await h().run(store((s) => s.batchesOf(a.id, campaignOfB.id)))).toEqual([])
        expect(await h().stored.campaignRecipients(a.id)).toEqual(recipientsOfA)
        expect(await h().run(store((s) => s.counts(a.id, campaignOfA.id)))).toEqual({ byState: { sent: 1, pending: 1 }, skippedByReason: {} })
      })

      it("never changes another tenant's recipients, by update or replan", async () => {
        const { a, b, campaignOfB, recipientsOfB } = await h().run(twoTenants)

        await h().exit(store((s) => s.updateRecipient({ ...recipientsOfB[1]!, tenant_id: a.id, state: "failed", error: "hijacked" })))
        await h().exit(store((s) => s.replanRecipients(a.id, campaignOfB.id, [{ seq: 1, batch_day: 5, planned_at: at("23:00:00.000") }])))

        expect(await h().stored.campaignRecipients(b.id)).toEqual(recipientsOfB)
      })

      it("never gives a tenant recipients or batches under another tenant's campaign, nor keeps that tenant from adding its own", async () => {
        const { a, b, campaignOfB, recipientsOfA, recipientsOfB, batchOfA, batchOfB } = await h().run(twoTenants)
        // Refusing or doing nothing are both fine; writing rows of A under B's campaign is not.
        const hijacked = [0, 2].map((seq) => campaignRecipientRecord({ ...campaignOfB, tenant_id: a.id }, seq, { state: "failed" }))
        await h().exit(store((s) => s.insertRecipients(hijacked)))
        await h().exit(store((s) => s.putBatches(a.id, campaignOfB.id, [{ ...batchOfB, tenant_id: a.id, day: 1 }, { ...batchOfB, tenant_id: a.id }])))

        expect(await h().stored.campaignRecipients(a.id)).toEqual(recipientsOfA)
        expect(await h().stored.campaignBatches(a.id)).toEqual([batchOfA])
        expect(await h().stored.campaignBatches(b.id)).toEqual([batchOfB])
        expect(await h().stored.campaignRecipients(b.id)).toEqual(recipientsOfB)

        // B's own next recipient and batch land where A's attempt would have gone.
        const next = campaignRecipientRecord(campaignOfB, 2)
        const dayOne = campaignBatchRecord(campaignOfB, 1)
        await insertRecipients(h, [next])
        await h().run(store((s) => s.putBatches(b.id, campaignOfB.id, [batchOfB, dayOne])))
        expect(await h().stored.campaignRecipients(b.id)).toEqual([...recipientsOfB, next])
        expect(await h().stored.campaignBatches(b.id)).toEqual([batchOfB, dayOne])
      })

      it("counts only the tenant's own campaigns and recipients in the channel's history", async () => {
        const { a, b, campaignOfA, campaignOfB, channelId, contactId } = await h().run(twoTenants)
        const otherContact = newId()
        await insertRecipients(h, [campaignRecipientRecord(campaignOfB, 2, { contact_id: otherContact, state: "read", handed_at: at("11:10:00.000") })])
        const since = at("10:00:00.000")

        expect(await h().run(store((s) => s.completedThrough(a.id, channelId, newId())))).toBe(1)
        expect(await h().run(store((s) => s.completedThrough(a.id, channelId, campaignOfA.id)))).toBe(0)
        expect(await h().run(store((s) => s.completedThrough(b.id, channelId, campaignOfA.id)))).toBe(1)
        expect(await h().run(store((s) => s.sentThrough(a.id, channelId)))).toBe(1)
        expect(await h().run(store((s) => s.sentThrough(b.id, channelId)))).toBe(2)
        expect(await h().run(store((s) => s.reachedSince(a.id, channelId, since, [otherContact, contactId]))))
          .toEqual({ distinct: 1, already: [contactId] })
        expect(await h().run(store((s) => s.reachedSince(b.id, channelId, since, [otherContact, contactId]))))
          .toEqual({ distinct: 2, already: [otherContact, contactId] })
      })
    })

    describe("settleRecipients", () => {
      type Settlement = Parameters<CampaignStore["Service"]["settleRecipients"]>[2][number]
      type Settled = Pick<CampaignRecipientRecord, "state" | "handed_at" | "message_id" | "external_id" | "error" | "updated_at">

      /** A settlement of `recipient` from the state it was read in, with `to` over what it holds of the columns settled. */
      const settlementOf = (recipient: CampaignRecipientRecord, to: Partial<Settled>): Settlement => ({
        seq: recipient.seq,
        expected: recipient.state,
        state: recipient.state,
        handed_at: recipient.handed_at,
        message_id: recipient.message_id,
        external_id: recipient.external_id,
        error: recipient.error,
        updated_at: recipient.updated_at,
        ...to
      })

      const settle = (tenantId: string, campaignId: string, settlements: ReadonlyArray<Settlement>) =>
        store((s) => s.settleRecipients(tenantId, campaignId, settlements))

      /** A hand-over to the operator at 12:00 as a new message. */
      const handOver = () => ({ state: "sending", handed_at: NOW, message_id: newId(), updated_at: NOW }) as const
      const handed = { state: "sending", handed_at: at("11:00:00.000"), message_id: newId() } as const

      it("moves each recipient still in the state expected, writing only state, hand-over, message, operator id, error and time, and resolves to the seqs moved", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id, { channel_ids: [newId(), newId()] })
        const sameSeqs = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign, sameSeqs]))
        // Every column the settlement does not own holds something of its own.
        const planned = { channel_id: campaign.channel_ids[1]!, batch_day: 2, planned_at: at("09:30:00.000"), skip_reason: "re-planned — Zoë" }
        const [toHand, toSent, toFailed, backToPending] = [
          campaignRecipientRecord(campaign, 0, planned),
          ...[1, 2, 3].map((seq) => campaignRecipientRecord(campaign, seq, { ...planned, ...handed, message_id: newId() }))
        ]
        const neighbours = [0, 1].map((seq) => campaignRecipientRecord(sameSeqs, seq, { state: seq === 0 ? "pending" : "sending" }))
        await insertRecipients(h, [toHand!, toSent!, toFailed!, backToPending!, ...neighbours])
        const moves: ReadonlyArray<readonly [CampaignRecipientRecord, Partial<Settled>]> = [
          [toHand!, handOver()],
          [toSent!, { state: "sent", external_id: `wamid.${newId()}==`, updated_at: at("12:00:01.000") }],
          [toFailed!, { state: "failed", error: `{"code":131026,"title":"Zoë's \\"undeliverable\\" 🚫"}`, updated_at: at("12:00:02.000") }],
          // Given back for a later try: the hand-over and message it had are cleared.
          [backToPending!, { state: "pending", handed_at: null, message_id: null, updated_at: at("12:00:03.000") }]
        ]

        const moved = await h().run(settle(tenant.id, campaign.id, moves.map(([r, to]) => settlementOf(r, to))))
        expect(moved).toEqual(new Set([0, 1, 2, 3]))
        expect(await storedRecipientsOf(h, campaign)).toEqual(moves.map(([r, to]) => ({ ...r, ...to })))
        expect(await storedRecipientsOf(h, sameSeqs)).toEqual(neighbours)
      })

      it("moves none not in the state expected (moved meanwhile, or handed already), nor unknown seqs, and leaves them out of the seqs moved", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const [movedMeanwhile, page, stillPending] = [
          campaignRecipientRecord(campaign, 0, handed),
          campaignRecipientRecord(campaign, 1),
          campaignRecipientRecord(campaign, 2)
        ]
        await insertRecipients(h, [movedMeanwhile, page, stillPending])
        const meanwhile: CampaignRecipientRecord = { ...movedMeanwhile, state: "failed", error: "timed out", updated_at: at("11:30:00.000") }
        await h().run(store((s) => s.updateRecipient(meanwhile)))
        const sent = { state: "sent", external_id: "wamid.late", updated_at: NOW } as const
        const first = handOver()

        const moved = await h().run(settle(tenant.id, campaign.id, [
          settlementOf(movedMeanwhile, sent),
          settlementOf(page, first),
          settlementOf({ ...stillPending, state: "sending" }, sent),
          settlementOf(campaignRecipientRecord(campaign, 99), first)
        ]))
        expect(moved).toEqual(new Set([1]))
        const stored = [meanwhile, { ...page, ...first }, stillPending]
        expect(await storedRecipientsOf(h, campaign)).toEqual(stored)

        // Another round handing the same page over again (at most once) changes nothing.
        expect(await h().run(settle(tenant.id, campaign.id, [settlementOf(page, handOver())]))).toEqual(new Set())
        expect(await storedRecipientsOf(h, campaign)).toEqual(stored)
      })

      it("moves a recipient given twice in one batch once, to one of its settlements", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const [twice, rivals] = [0, 1].map((seq) => campaignRecipientRecord(campaign, seq, handed))
        await insertRecipients(h, [twice!, rivals!])
        const sent = { state: "sent", external_id: "wamid.twice", updated_at: NOW } as const
        const failed = { state: "failed", error: "131026", updated_at: at("12:00:01.000") } as const

        const moved = await h().run(settle(tenant.id, campaign.id, [settlementOf(twice!, sent), settlementOf(rivals!, sent), settlementOf(twice!, sent), settlementOf(rivals!, failed)]))
        expect(moved).toEqual(new Set([0, 1]))
        const [storedTwice, storedRivals] = await storedRecipientsOf(h, campaign)
        expect(storedTwice).toEqual({ ...twice!, ...sent })
        expect([{ ...rivals!, ...sent }, { ...rivals!, ...failed }]).toContainEqual(storedRivals)
      })

      it("never moves another tenant's recipients, even of the same seqs, and moves nothing for an empty batch", async () => {
        const { a, b, campaignOfA, campaignOfB, recipientsOfA, recipientsOfB } = await h().run(twoTenants)
        const failed = { state: "failed", error: "hijacked", updated_at: NOW } as const

        expect(await h().run(settle(a.id, campaignOfB.id, recipientsOfB.map((r) => settlementOf(r, failed))))).toEqual(new Set())
        expect(await h().run(settle(a.id, campaignOfA.id, []))).toEqual(new Set())
        expect(await h().stored.campaignRecipients(b.id)).toEqual(recipientsOfB)
        expect(await h().stored.campaignRecipients(a.id)).toEqual(recipientsOfA)

        // Its own campaign's recipient 1 moves; B's recipient 1 stays as it was.
        const first = handOver()
        expect(await h().run(settle(a.id, campaignOfA.id, [settlementOf(recipientsOfA[1]!, first)]))).toEqual(new Set([1]))
        expect(await h().stored.campaignRecipients(a.id)).toEqual([recipientsOfA[0], { ...recipientsOfA[1]!, ...first }])
        expect(await h().stored.campaignRecipients(b.id)).toEqual(recipientsOfB)
      })

      it("moves 1,200 recipients in one call, with awkward and JSON-looking operator ids and errors kept as text", async () => {
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const recipients = Array.from({ length: 1_200 }, (_, seq) => campaignRecipientRecord(campaign, seq, seq % 4 === 0 ? {} : handed))
        await insertRecipients(h, recipients)
        const awkward = (i: number) => AWKWARD_TEXTS[i % AWKWARD_TEXTS.length]!
        const toOf = (seq: number): Partial<Settled> =>
          seq % 4 === 0
            ? { state: "sending", handed_at: NOW, message_id: awkward(seq), updated_at: NOW }
            : seq % 4 === 1
            ? { state: "failed", error: awkward(seq), updated_at: at("12:00:01.000") }
            : { state: "sent", external_id: seq < 4 * AWKWARD_TEXTS.length ? awkward(seq) : `wamid.${seq}`, updated_at: at("12:00:02.000") }

        const moved = await h().run(settle(tenant.id, campaign.id, recipients.map((r) => settlementOf(r, toOf(r.seq)))))
        expect(moved).toEqual(new Set(seqs(recipients)))
        expect(await storedRecipientsOf(h, campaign)).toEqual(recipients.map((r) => ({ ...r, ...toOf(r.seq) })))
      })

      it("loses to a settlement in another open transaction: waits for it, leaves that writer's state and reports the seq not moved (needs several connections)", async (ctx) => {
        ctx.skip(!h().capabilities.concurrentConnections, NEEDS_CONNECTIONS)
        const { tenant } = await h().run(seedTenant)
        const campaign = campaignRecord(tenant.id)
        await h().run(insertCampaigns([campaign]))
        const [contested, other] = [0, 1].map((seq) => campaignRecipientRecord(campaign, seq))
        await insertRecipients(h, [contested!, other!])
        const [theirs, ours] = [handOver(), handOver()]

        const { whileHeld, after } = await h().run(contend({
          hold: settle(tenant.id, campaign.id, [settlementOf(contested!, theirs)]),
          finish: () => Effect.void,
          contend: settle(tenant.id, campaign.id, [settlementOf(contested!, ours), settlementOf(other!, ours)])
        }))
        // Answering before the other committed, it would have handed the recipient over twice.
        expect(whileHeld).toEqual(Option.none())
        expect(after).toEqual(new Set([1]))
        expect(await storedRecipientsOf(h, campaign)).toEqual([{ ...contested!, ...theirs }, { ...other!, ...ours }])
      })
    })
  }
})
