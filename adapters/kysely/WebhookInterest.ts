import type { Dialect } from "./Migrations.ts"

/** Endpoints `e` of the tenant of the event row aliased `event` that still take events: active or suspended, not permanently deactivated. */
const takingEndpoints = (event: string) =>
  `SELECT 1 FROM webhook_endpoints e WHERE e.tenant_id = ${event}.tenant_id AND e.permanently_deactivated_at IS NULL
    AND (e.is_active = 1 OR e.suspended_at IS NOT NULL)`

/**
 * Whether an endpoint may want an event, as SQL over the event's row aliased `event` (its
 * `tenant_id` and `type`): one of its tenant subscribes to its type (a string of its JSON array of
 * types) and still takes events, as `EndpointMachine.routeEvent` routes them: active or suspended
 * (a suspended endpoint queues what it is sent), not inactive nor permanently deactivated. Read
 * through the endpoints' tenant index when the dispatcher takes events.
 */
export const mayBeWanted = (dialect: Dialect, event: string): string => {
  const subscribed = dialect === "postgres"
    ? `EXISTS (SELECT 1 FROM json_array_elements_text(e.subscribed_events::json) AS s (type) WHERE s.type = ${event}.type)`
    : `EXISTS (SELECT 1 FROM json_each(e.subscribed_events) WHERE json_each.value = ${event}.type)`
  return `EXISTS (${takingEndpoints(event)} AND ${subscribed})`
}

/**
 * Whether the event's tenant has an endpoint that still takes events, whatever it subscribes to: the
 * look when an event is appended (one index probe, no JSON read), so a tenant without webhooks never
 * sends its events through a fan-out round. The dispatcher's take reads subscriptions (`mayBeWanted`).
 */
export const tenantTakesEvents = (event: string): string => `EXISTS (${takingEndpoints(event)})`
