import { Clock, Effect } from "effect"
import type { ContactService } from "../contacts/ContactService.ts"
import type { ListService } from "../lists/ListService.ts"
import type { NotFound } from "../kernel/ApiError.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { fromMillis } from "../kernel/Timestamp.ts"
import type {
  CampaignBatchRecord,
  CampaignRecipientRecord,
  CampaignRecord,
  CampaignStore
} from "../ports/CampaignStore.ts"
import { planSplit, type PlannedBatch, splitCapacity } from "./Pacing.ts"

/** Contacts read (and recipients written) per page: memory stays flat in the audience's size. */
export const AUDIENCE_PAGE = 500

/** What reading an audience needs. */
export interface AudienceDeps {
  readonly store: CampaignStore["Service"]
  readonly contacts: ContactService["Service"]
  readonly lists: ListService["Service"]
}

/** The audience's sources in order, each a page at a time: every list, then the contact ids. */
const forEachPage = (
  deps: Pick<AudienceDeps, "lists">,
  campaign: CampaignRecord,
  each: (contactIds: ReadonlyArray<string>, sourceIndex: number) => Effect.Effect<void, StorageError>
) =>
  Effect.gen(function*() {
    for (const [sourceIndex, listId] of campaign.audience.list_ids.entries()) {
      let after: string | null = null
      for (;;) {
        const page: { readonly contactIds: ReadonlyArray<string>; readonly next: string | null } = yield* deps.lists
          .audiencePage(campaign.tenant_id, listId, after, AUDIENCE_PAGE)
        if (page.contactIds.length > 0) yield* each(page.contactIds, sourceIndex)
        if (page.next === null) break
        after = page.next
      }
    }
    const ids = campaign.audience.contact_ids
    for (let i = 0; i < ids.length; i += AUDIENCE_PAGE) {
      yield* each(ids.slice(i, i + AUDIENCE_PAGE), campaign.audience.list_ids.length)
    }
  })

/** An upper bound of the audience before it is read: every source's size added (duplicates counted). */
export const estimateAudience = <D extends Pick<AudienceDeps, "lists">>(deps: D, campaign: CampaignRecord) =>
  Effect.gen(function*() {
    let total = 0
    yield* forEachPage(deps, campaign, (ids) => Effect.sync(() => void (total += ids.length)))
    return total
  }) as Effect.Effect<number, NotFound | StorageError>

/** What reading the audience found: recipients per channel (by index of `channel_ids`), and how many were skipped. */
export interface MaterializedAudience {
  readonly perChannel: ReadonlyArray<number>
  readonly reachable: number
  readonly skipped: number
}

/**
 * Reads the audience into recipients, a page at a time, in one deterministic order (so a second
 * reading after a crash adds nobody twice): duplicates (when skipped), contacts that left every
 * list, that opted out of marketing (everywhere or on the number), or that have no phone are stored
 * `skipped` with the reason; the others are spread over the numbers in turn, all planned at `at`.
 */
export const materialize = (deps: AudienceDeps, campaign: CampaignRecord, at: string) =>
  Effect.gen(function*() {
    const { store } = deps
    const tenantId = campaign.tenant_id
    const channels = campaign.channel_ids
    const perChannel = channels.map(() => 0)
    let seq = 0
    let next = 0
    let skipped = 0
    yield* forEachPage(deps, campaign, (ids, sourceIndex) =>
      Effect.gen(function*() {
        const found = new Map((yield* deps.contacts.getMany(tenantId, ids)).map((c) => [c.id, c]))
        const consent = yield* deps.lists.consentAmong(tenantId, ids)
        const optedOut = new Map<string, Set<string | null>>()
        for (const o of consent.optOuts) optedOut.set(o.contact_id, (optedOut.get(o.contact_id) ?? new Set()).add(o.channel_id))
        const rows: Array<CampaignRecipientRecord> = []
        const seenHere = new Set<string>()
        for (const contactId of ids) {
          seq++
          const contact = found.get(contactId)
          // A duplicate can only come from a later source (each source lists a contact once).
          const duplicate = campaign.skip_duplicates &&
            (seenHere.has(contactId) || (sourceIndex > 0 && (yield* store.hasRecipient(tenantId, campaign.id, contactId))))
          seenHere.add(contactId)
          const channelIndex = next % channels.length
          const outs = optedOut.get(contactId)
          const reason = contact === undefined
            ? "not_found"
            : duplicate
            ? "duplicate"
            : consent.unsubscribedOnly.has(contactId)
            ? "unsubscribed"
            : outs !== undefined && (outs.has(null) || outs.has(channels[channelIndex]!))
            ? "opted_out"
            : contact.phone === null
            ? "unreachable"
            : null
          if (reason === null) {
            perChannel[channelIndex]!++
            next++
          } else {
            skipped++
          }
          rows.push({
            tenant_id: tenantId,
            campaign_id: campaign.id,
            seq,
            contact_id: contactId,
            channel_id: reason === null ? channels[channelIndex]! : null,
            state: reason === null ? "pending" : "skipped",
            skip_reason: reason,
            batch_day: 0,
            planned_at: at,
            handed_at: null,
            message_id: null,
            external_id: null,
            error: null,
            updated_at: at
          })
        }
        yield* store.insertRecipients(rows)
      }))
    return { perChannel, reachable: next, skipped } satisfies MaterializedAudience
  }) as Effect.Effect<MaterializedAudience, NotFound | StorageError>

/** Why a recipient was left out of a split: the plan's 60 days were full (the audience grew after the send was accepted). */
export const BEYOND_SPLIT_REASON = "split_exceeds_60_days"

/**
 * Each number's batches: one batch of everybody at `startMs` without split sending, else the split
 * plan, never longer than 60 days. A number with more pending recipients than its 60 days carry gets
 * full batches for 60 days; `assignBatches` leaves the rest out (skipped, `split_exceeds_60_days`).
 * Sends and schedules that would need more are refused up front (`checkSplitFits`), so only an
 * audience that grew after that check is cut. Never `ok: false` any more (kept for its callers).
 */
export const planBatches = (
  campaign: CampaignRecord,
  counts: ReadonlyArray<number>,
  limits: ReadonlyArray<number | null | undefined>,
  startMs: number,
  startDays: ReadonlyArray<number>
): { readonly ok: true; readonly plans: ReadonlyArray<ReadonlyArray<PlannedBatch>> } | { readonly ok: false; readonly reason: string } => {
  const plans: Array<ReadonlyArray<PlannedBatch>> = []
  for (const [index, count] of counts.entries()) {
    const split = campaign.split_sending
    if (split === null) {
      plans.push(count === 0 ? [] : [{ day: startDays[index] ?? 0, size: count, startsAt: startMs }])
      continue
    }
    const shape = { mode: split.mode, dailyBatch: split.daily_batch, messagingLimit: limits[index], startDay: startDays[index] ?? 0 }
    const plan = planSplit({
      ...shape,
      recipients: Math.min(count, splitCapacity(shape)),
      firstBatchAt: startMs,
      sendTime: split.send_time,
      timeZone: campaign.timezone
    })
    // Never: the recipients were cut to what 60 days carry.
    if (!plan.ok) throw new RangeError(`campaign ${campaign.id}: a split of its capacity did not fit 60 days`)
    plans.push(plan.batches)
  }
  return { ok: true, plans }
}

/**
 * Gives the pending recipients their batch, in `seq` order per number: the first `size` of a
 * number go to its first batch, and so on; stores the batches. A page at a time. Recipients past a
 * number's last batch (a split's 60 days were full) are skipped with `split_exceeds_60_days`, which
 * the statistics count, never left pending unplanned.
 */
export const assignBatches = (
  store: CampaignStore["Service"],
  campaign: CampaignRecord,
  plans: ReadonlyArray<ReadonlyArray<PlannedBatch>>
) =>
  Effect.gen(function*() {
    const tenantId = campaign.tenant_id
    const index = new Map(campaign.channel_ids.map((id, i) => [id, i]))
    const rank = campaign.channel_ids.map(() => 0)
    const batchRecords: Array<CampaignBatchRecord> = plans.flatMap((plan, i) =>
      plan.map((batch) => ({
        tenant_id: tenantId,
        campaign_id: campaign.id,
        channel_id: campaign.channel_ids[i]!,
        day: batch.day,
        planned_size: batch.size,
        starts_at: fromMillis(batch.startsAt)
      })))
    const existing = yield* store.batchesOf(tenantId, campaign.id)
    // Days before the new plan's first stay in the record; the new plan replaces every day from its
    // first on, and a number with nothing left keeps what it had.
    const firstDay = new Map<string, number>()
    for (const b of batchRecords) firstDay.set(b.channel_id, Math.min(firstDay.get(b.channel_id) ?? b.day, b.day))
    const kept = existing.filter((b) => {
      const first = firstDay.get(b.channel_id)
      return first === undefined || b.day < first
    })
    yield* store.putBatches(tenantId, campaign.id, [...kept, ...batchRecords])
    let after: number | null = null
    let skipped = 0
    for (;;) {
      const page: ReadonlyArray<CampaignRecipientRecord> = yield* store.recipientsIn(tenantId, campaign.id, "pending", {
        plannedBy: null,
        afterSeq: after,
        limit: 1000
      })
      if (page.length === 0) break
      const beyond: Array<CampaignRecipientRecord> = []
      const assigned = page.flatMap((recipient) => {
        const i = recipient.channel_id === null ? undefined : index.get(recipient.channel_id)
        if (i === undefined) return []
        const plan = plans[i] ?? []
        let position = rank[i]!++
        for (const batch of plan) {
          if (position < batch.size) return [{ seq: recipient.seq, batch_day: batch.day, planned_at: fromMillis(batch.startsAt) }]
          position -= batch.size
        }
        beyond.push(recipient)
        return []
      })
      // Only those whose batch changes: a campaign without split sending keeps what it was read with.
      const byseq = new Map(page.map((recipient) => [recipient.seq, recipient]))
      yield* store.replanRecipients(tenantId, campaign.id, assigned.filter(({ batch_day, planned_at, seq }) => {
        const now = byseq.get(seq)!
        return now.batch_day !== batch_day || now.planned_at !== planned_at
      }))
      if (beyond.length > 0) {
        const at = fromMillis(yield* Clock.currentTimeMillis)
        skipped += beyond.length
        yield* Effect.forEach(beyond, (recipient) =>
          store.updateRecipient({ ...recipient, state: "skipped", skip_reason: BEYOND_SPLIT_REASON, updated_at: at }), { discard: true })
      }
      after = page.at(-1)!.seq
    }
    if (skipped > 0) {
      yield* Effect.logWarning(`campaign ${campaign.id}: ${skipped} recipient(s) beyond the split's 60 days skipped (${BEYOND_SPLIT_REASON})`)
    }
  })
