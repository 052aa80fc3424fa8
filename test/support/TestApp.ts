import { Effect, Layer } from "effect"
import { type ManualClock, makeManualClock } from "../../adapters/clock/ManualClock.ts"
import { layer as kyselyLayer } from "../../adapters/kysely/KyselyStorage.ts"
import { make, type Omnichannel, type OmnichannelOptions } from "../../src/app/Omnichannel.ts"
import { type Bootstrapped, Operator } from "../../src/auth/Operator.ts"
import { OutboxNotices, type OutboxNoticesService } from "../../src/ports/OutboxNotices.ts"
import type { TestDatabase } from "./Databases.ts"

/** The library running in-process over a test database, with a manual clock. */
export interface TestApp {
  readonly app: Omnichannel
  readonly clock: ManualClock
  readonly database: TestDatabase
  /** Runs an operator command (the admin CLI's commands) and returns its result. */
  readonly operator: <A, E>(f: (operator: Operator["Service"]) => Effect.Effect<A, E>) => Promise<A>
  /** Sends a request to `/api/v1{path}` and returns status, parsed JSON body and headers. */
  readonly call: (
    method: string,
    path: string,
    options?: { readonly token?: string; readonly body?: unknown; readonly headers?: Record<string, string> }
  ) => Promise<{ readonly status: number; readonly body: any; readonly headers: Headers }>
  readonly close: () => Promise<void>
}

/** What a test may add to `make`'s options, e.g. `{ providers: simulatedProviders, publicUrl: "http://connect.test" }`. */
export type TestAppOptions = Omit<OmnichannelOptions<never>, "storage" | "clock"> & {
  /**
   * Other processes' commits as a storage that hears of them would report them. Workers subscribe
   * at their first wait for work, so a test learns from `subscribe` that a worker's first look is over.
   */
  readonly outboxNotices?: OutboxNoticesService
}

/** Starts the library over `database` (which the returned `close` also closes). */
export const startTestApp = async (database: TestDatabase, options: TestAppOptions = {}): Promise<TestApp> => {
  const { outboxNotices, ...makeOptions } = options
  const clock = makeManualClock(Date.parse("2026-11-22T12:00:00.000Z"))
  const storage = kyselyLayer(database.db, database.dialect)
  const app = await make({
    ...makeOptions,
    storage: outboxNotices === undefined ? storage : Layer.merge(storage, Layer.succeed(OutboxNotices, outboxNotices)),
    clock: clock.clock
  })
  return {
    app,
    clock,
    database,
    operator: (f) => app.run(Effect.flatMap(Operator, f)),
    call: async (method, path, options = {}) => {
      const headers: Record<string, string> = { ...options.headers }
      if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
      let body: string | undefined
      if (options.body !== undefined) {
        headers["content-type"] ??= "application/json"
        body = typeof options.body === "string" ? options.body : JSON.stringify(options.body)
      }
      const response = await app.handler(new Request(`http://test.local/api/v1${path}`, { method, headers, body }))
      const text = await response.text()
      return { status: response.status, body: text === "" ? undefined : JSON.parse(text), headers: response.headers }
    },
    close: async () => {
      await app.dispose()
      await database.close()
    }
  }
}

/** Bootstraps an owner, billing account, tenant and parent key holding every scope. */
export const bootstrap = (test: TestApp, email?: string): Promise<Bootstrapped> =>
  test.operator((operator) => operator.bootstrap(email === undefined ? {} : { email }))

/**
 * Posts `raw` (RFC 5322 bytes) to the inbound route of email integration `integration` as a mail
 * server would, and processes it: resolves to the route's answer status once the work it set off is done.
 */
export const receiveEmail = async (
  test: TestApp,
  integration: { readonly id: string; readonly inbound_secret: string },
  raw: Uint8Array
): Promise<number> => {
  const answer = await test.app.handler(new Request(`http://test.local/webhooks/email/${integration.id}`, {
    method: "POST",
    headers: { "content-type": "message/rfc822", authorization: `Bearer ${integration.inbound_secret}` },
    body: new Uint8Array(raw)
  }))
  await test.app.drainDueWork()
  return answer.status
}
