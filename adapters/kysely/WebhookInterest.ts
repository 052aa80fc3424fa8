import type { Dialect } from "./Migrations.ts"

/**
 * Whether an endpoint may want an event, as SQL over the event's row aliased `event` (its
 * `tenant_id` and `type`): one of its tenant subscribes to its type (a string of its JSON array of
 * types) and still takes events, as `EndpointMachine.routeEvent` routes them: active or suspended,
 * not inactive nor permanently deactivated. Read through the endpoints' tenant index, when an event
 * is appended (one no endpoint may want is stored fanned out already) and when the dispatcher takes it.
 */
export const mayBeWanted = (dialect: Dialect, event: string): string => {
  const subscribed = dialect === "postgres"
    ? `EXISTS (SELECT 1 FROM json_array_elements_text(e.subscribed_events::json) AS s (type) WHERE s.type = ${event}.type)`
    : `EXISTS (SELECT 1 FROM json_each(e.subscribed_events) WHERE json_each.value = ${event}.type)`
  return `EXISTS (SELECT 1 FROM webhook_endpoints e
    WHERE e.tenant_id = ${event}.tenant_id AND e.permanently_deactivated_at IS NULL
      AND (e.is_active = 1 OR e.suspended_at IS NOT NULL) AND ${subscribed})`
}
