import { Effect } from "effect"
import type { Kysely } from "kysely"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { type Database, type Dialect, layer } from "../adapters/kysely/KyselyStorage.ts"
import { nodeHmacSigner } from "../adapters/node/NodeHmacSigner.ts"
import { make, type Omnichannel } from "../src/app/Omnichannel.ts"
import { Operator } from "../src/auth/Operator.ts"
import { type EventEnvelope, makeEvent } from "../src/kernel/EventEnvelope.ts"
import { Notifier } from "../src/ports/Notifier.ts"
import { OutboxStore } from "../src/ports/OutboxStore.ts"

/** The library over a migrated database, posting through the guarded client that trusts the receiver's certificate. */
export interface Engine {
  readonly app: Omnichannel
  readonly close: () => Promise<void>
}

/** Starts the library over `db`; `close` disposes it and destroys `db`. */
export const startEngine = async (
  db: Kysely<Database>,
  dialect: Dialect,
  options: { readonly ca: string }
): Promise<Engine> => {
  const outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"], ca: options.ca })
  const app = await make({
    storage: layer(db, dialect),
    outbound,
    signer: nodeHmacSigner,
    // The replay phase suspends the endpoint on purpose; its notification mails are not news here.
    notifier: Notifier.of({ send: () => Effect.void })
  })
  return {
    app,
    close: async () => {
      await app.dispose()
      outbound.close()
      await db.destroy()
    }
  }
}

/** A tenant with one endpoint subscribed to `contact.created` at `url`. */
export interface Subscription {
  readonly tenantId: string
  readonly apiKey: string
  readonly endpointId: string
}

/** Bootstraps a tenant and creates its endpoint through the API, as a customer would. */
export const subscribe = async (app: Omnichannel, url: string): Promise<Subscription> => {
  const { tenant_id, api_key } = await app.run(Effect.flatMap(Operator, (operator) => operator.bootstrap({})))
  const response = await app.handler(new Request("http://bench.local/api/v1/webhook-endpoints", {
    method: "POST",
    headers: { authorization: `Bearer ${api_key}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "Benchmark receiver", url, subscribed_events: ["contact.created"] })
  }))
  const body = await response.json() as { webhook_id?: string }
  if (response.status !== 201 || body.webhook_id === undefined) {
    throw new Error(`creating the endpoint answered ${response.status}: ${JSON.stringify(body)}`)
  }
  return { tenantId: tenant_id, apiKey: api_key, endpointId: body.webhook_id }
}

/** Calls `/api/v1{path}` with the subscription's key and returns status and parsed body. */
export const callApi = async (
  app: Omnichannel,
  subscription: Subscription,
  method: string,
  path: string
): Promise<{ readonly status: number; readonly body: any }> => {
  const response = await app.handler(new Request(`http://bench.local/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${subscription.apiKey}` }
  }))
  const text = await response.text()
  return { status: response.status, body: text === "" ? undefined : JSON.parse(text) }
}

/** Calls `POST /webhook-endpoints/{id}/verify`; a passed check lifts a suspension and replays the queue. */
export const verify = async (app: Omnichannel, subscription: Subscription): Promise<number> =>
  (await callApi(app, subscription, "POST", `/webhook-endpoints/${subscription.endpointId}/verify`)).status

/** A `contact.created` payload of about the size real ones have. */
const contactData = (n: number) => ({
  contact: {
    id: `c_${n}`,
    name: `Contact ${n}`,
    phone: "+14155550100",
    email: `contact${n}@example.com`,
    tags: ["benchmark"],
    custom_fields: { note: "x".repeat(200) }
  }
})

/** `count` `contact.created` envelopes of the tenant, built as the library builds its events. */
export const contactEvents = (tenantId: string, count: number): Effect.Effect<Array<EventEnvelope>> =>
  Effect.forEach(
    Array.from({ length: count }, (_, n) => n),
    (n) => makeEvent({ type: "contact.created", tenantId, data: contactData(n) })
  )

/**
 * Appends `count` events to the outbox in one statement and returns their ids, so the benchmark
 * measures delivery, not contact creation.
 */
export const appendEvents = (app: Omnichannel, tenantId: string, count: number): Promise<ReadonlyArray<string>> =>
  app.run(Effect.gen(function*() {
    const events = yield* contactEvents(tenantId, count)
    const outbox = yield* OutboxStore
    yield* outbox.append(events)
    return events.map((event) => event.id)
  }))
