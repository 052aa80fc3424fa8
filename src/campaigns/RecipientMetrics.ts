import { Effect } from "effect"
import { countCampaignRecipients } from "../kernel/Metrics.ts"
import type { CampaignStore } from "../ports/CampaignStore.ts"

/**
 * `store` with its recipient writes counted by the state written (`omni_campaign_recipients_total`):
 * planned as `pending` or `skipped`, then `sending`, `sent`, `delivered`, `read`, `failed`. A write
 * counts once it succeeded; a recipient handed back to `pending` for a later try counts again.
 */
export const countingRecipientWrites = (store: CampaignStore["Service"]): CampaignStore["Service"] => ({
  ...store,
  insertRecipients: (recipients) => Effect.tap(store.insertRecipients(recipients), () => countCampaignRecipients(recipients)),
  updateRecipient: (recipient) => Effect.tap(store.updateRecipient(recipient), () => countCampaignRecipients([recipient])),
  settleRecipients: (tenantId, campaignId, moves) =>
    Effect.tap(store.settleRecipients(tenantId, campaignId, moves), (moved) =>
      countCampaignRecipients(moves.filter((move) => moved.has(move.seq)).map(({ state }) => ({ tenant_id: tenantId, state }))))
})
