import { Effect } from "effect"
import { type GuardedHttp, makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import type { Bootstrapped } from "../../src/auth/Operator.ts"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import type { Notification } from "../../src/ports/Notifier.ts"
import type { OutboundClient } from "../../src/ports/OutboundHttp.ts"
import { OutboxStore } from "../../src/ports/OutboxStore.ts"
import type { DispatchSettings } from "../../src/webhooks/engine/DispatchSettings.ts"
import type { Certificate } from "../outbound/LocalServers.ts"
import { testDatabases } from "../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp, type TestAppOptions } from "../support/TestApp.ts"
import { type Answer, type Receiver, startReceiver } from "./Receiver.ts"

/** A tenant as the tests drive it: its owner's parent key and the API as that key sees it. */
export interface Tenant extends Bootstrapped {
  readonly as: (method: string, path: string, body?: unknown) => Promise<{ readonly status: number; readonly body: any }>
  /** Creates an endpoint (subscribed to contact.created unless `fields` say otherwise) and returns its id and secret. */
  readonly createEndpoint: (url: string, fields?: Record<string, unknown>) => Promise<{ readonly id: string; readonly secret: string }>
  /** The endpoint as GET /webhook-endpoints/{id} shows it. */
  readonly endpoint: (id: string) => Promise<any>
  /** One page of GET /webhook-endpoints/{id}/deliveries, default query: every delivery, newest first. */
  readonly deliveries: (id: string, query?: string) => Promise<any>
  /** Creates a contact (a `contact.created` event) and returns its id. */
  readonly createContact: (name?: string) => Promise<string>
  /** Appends events straight to the outbox, as a change in the tenant would. */
  readonly emit: (events: ReadonlyArray<EventEnvelope>) => Promise<void>
}

/** The library on a test database with the guarded client trusting the receivers, and a recording notifier. */
export interface WebhookApp {
  readonly test: TestApp
  /** Notifications sent so far (suspension, reactivation, disabling), in order. */
  readonly notifications: ReadonlyArray<Notification>
  readonly newTenant: () => Promise<Tenant>
  /** A receiver on 127.0.0.1, closed with the app. */
  readonly startReceiver: (answer?: Answer) => Promise<Receiver>
  /** Runs every due job (fan-out, attempts, re-verification) until nothing is due. */
  readonly drain: () => Promise<number>
  /** Moves the manual clock forward. */
  readonly advance: (ms: number) => void
  /** The clock's "now" as stored timestamps write it. */
  readonly now: () => string
  readonly close: () => Promise<void>
}

/**
 * Starts the app on sqlite-memory unless told otherwise, with `dispatch` overrides; `outboundOf`
 * makes the client the app gets out of the guarded one (the guarded one itself by default).
 */
export const startWebhookApp = async (
  certificate: Certificate,
  options: {
    readonly database?: string
    readonly dispatch?: Partial<DispatchSettings>
    readonly outboundOf?: (guarded: GuardedHttp) => OutboundClient
  } & TestAppOptions = {}
): Promise<WebhookApp> => {
  const { database = "sqlite-memory", outboundOf = (guarded) => guarded, ...makeOptions } = options
  const notifications: Array<Notification> = []
  const outbound = makeGuardedHttp({ allow: ["127.0.0.1/32"], ca: certificate.cert })
  const receivers: Array<Receiver> = []
  const test = await startTestApp(await testDatabases.find((d) => d.name === database)!.open(), {
    ...makeOptions,
    outbound: outboundOf(outbound),
    notifier: { send: (notification) => Effect.sync(() => void notifications.push(notification)) }
  })
  const newTenant = async (): Promise<Tenant> => {
    const owner = await bootstrap(test)
    const as: Tenant["as"] = (method, path, body) => test.call(method, path, { token: owner.api_key, body })
    const expectStatus = async (status: number, answer: Promise<{ readonly status: number; readonly body: any }>) => {
      const answered = await answer
      if (answered.status !== status) throw new Error(`expected ${status}, got ${answered.status}: ${JSON.stringify(answered.body)}`)
      return answered.body
    }
    return {
      ...owner,
      as,
      createEndpoint: async (url, fields = {}) => {
        const created = await expectStatus(201, as("POST", "/webhook-endpoints", {
          name: "Receiver",
          url,
          subscribed_events: ["contact.created"],
          ...fields
        }))
        return { id: created.webhook_id, secret: created.secret_key }
      },
      endpoint: (id) => expectStatus(200, as("GET", `/webhook-endpoints/${id}`)),
      deliveries: (id, query = "page_size=100") => expectStatus(200, as("GET", `/webhook-endpoints/${id}/deliveries?${query}`)),
      createContact: async (name = "Ada") => (await expectStatus(201, as("POST", "/contacts", { name }))).id,
      emit: (events) => test.app.run(Effect.flatMap(OutboxStore, (outbox) => outbox.append(events)))
    }
  }
  return {
    test,
    notifications,
    newTenant,
    startReceiver: async (answer) => {
      const receiver = await startReceiver(certificate, answer)
      receivers.push(receiver)
      return receiver
    },
    drain: () => test.app.drainDueWork(),
    advance: (ms) => test.clock.advance(ms),
    now: () => new Date(test.clock.nowMillis()).toISOString(),
    close: async () => {
      await Promise.all(receivers.map((receiver) => receiver.close()))
      outbound.close()
      await test.close()
    }
  }
}
