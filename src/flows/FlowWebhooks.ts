import { Effect } from "effect"
import type { ChannelService } from "../channels/ChannelService.ts"
import type { ChatappFieldHandler } from "../kernel/ChatappEvents.ts"
import { makeEvent } from "../kernel/EventEnvelope.ts"
import { now } from "../kernel/Timestamp.ts"
import type { FlowStore } from "../ports/FlowStore.ts"
import type { OutboxStore } from "../ports/OutboxStore.ts"

/** What the flows webhook handler needs. */
export interface FlowWebhookDeps {
  readonly store: FlowStore["Service"]
  readonly channels: ChannelService["Service"]
  readonly outbox: OutboxStore["Service"]
}

/** The metric fields an alert may carry, passed on when the platform sends them. */
const ALERT_FIELDS = ["error_rate", "threshold", "p50_latency", "p90_latency", "requests_count", "availability", "errors"] as const

const asRecord = (value: unknown): Readonly<Record<string, unknown>> | null =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null
const text = (value: unknown): string | null => (typeof value === "string" && value !== "" ? value : null)

/** RED while any alert is `ACTIVATED`, GREEN once every one is `DEACTIVATED`. */
export const healthOf = (alerts: Readonly<Record<string, string>>): "RED" | "GREEN" =>
  Object.values(alerts).some((state) => state === "ACTIVATED") ? "RED" : "GREEN"

/**
 * The platform's `flows` webhook field: a status change (`FLOW_STATUS_CHANGE`) or a health alert of
 * a flow, named by the business account (`entry.id`) and the platform's flow id. The stored flow
 * follows, and `chatapp_flow.status_changed` or `chatapp_flow.health_changed` goes out with the
 * event id `<flow definition id>:<hash of the change>`, the same for one change delivered twice.
 */
export const makeFlowWebhooks = (deps: FlowWebhookDeps): ChatappFieldHandler => ({
  name: "flow status and health",
  handle: (event) =>
    Effect.gen(function*() {
      const value = asRecord(event.value)
      const flowId = text(value?.flow_id)
      const kind = text(value?.event)
      if (value === null || flowId === null || kind === null) return "continue" as const
      for (const definition of yield* deps.store.findDefinitionsByMetaFlowId(flowId)) {
        const channel = yield* deps.channels.get(definition.tenant_id, definition.channel_id).pipe(
          Effect.catchTag("NotFound", () => Effect.succeed(null))
        )
        if (channel === null || channel.config.business_account_id !== event.entryId) continue
        const at = yield* now
        const flow = { id: definition.id, name: definition.name, meta_flow_id: definition.meta_flow_id }
        const common = { channel_id: channel.id, waba_id: event.entryId, flow, message: text(value.message) }
        const eventId = `${definition.id}:${event.key}`
        if (kind === "FLOW_STATUS_CHANGE") {
          const newStatus = text(value.new_status)
          if (newStatus === null) continue
          const oldStatus = text(value.old_status)
          yield* deps.store.updateDefinition(definition.tenant_id, { ...definition, status: newStatus, updated_at: at })
          yield* deps.outbox.append([
            yield* makeEvent({
              type: "chatapp_flow.status_changed",
              tenantId: definition.tenant_id,
              eventId,
              data: { ...common, ...(oldStatus === null ? {} : { old_status: oldStatus }), new_status: newStatus }
            })
          ])
          continue
        }
        const state = text(value.alert_state)
        if (state !== "ACTIVATED" && state !== "DEACTIVATED") continue
        const alerts = { ...definition.alerts, [kind]: state }
        const health = healthOf(alerts)
        yield* deps.store.updateDefinition(definition.tenant_id, { ...definition, alerts, health_status: health, updated_at: at })
        const severity = text(value.alert_severity)
        const metrics = Object.fromEntries(ALERT_FIELDS.flatMap((key) => (value[key] === undefined ? [] : [[key, value[key]]])))
        yield* deps.outbox.append([
          yield* makeEvent({
            type: "chatapp_flow.health_changed",
            tenantId: definition.tenant_id,
            eventId,
            data: {
              ...common,
              alert: { event: kind, alert_state: state, ...(severity === null ? {} : { alert_severity: severity }), ...metrics },
              health_status: health
            }
          })
        ])
      }
      return "continue" as const
    })
})
