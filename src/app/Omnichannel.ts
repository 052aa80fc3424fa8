import { Clock, Effect, Layer, ManagedRuntime } from "effect"
import { ApiKeyAuth } from "../auth/ApiKeyAuth.ts"
import { Operator } from "../auth/Operator.ts"
import { contactRoutes } from "../contacts/ContactRoutes.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { type ApiHandler, type ApiHandlerOptions, makeApiHandler } from "../http/ApiHandler.ts"
import type { Route } from "../http/Route.ts"
import { BackgroundWork, drainDueWork } from "../kernel/BackgroundWork.ts"
import type { AccountStore } from "../ports/AccountStore.ts"
import type { ApiKeyStore } from "../ports/ApiKeyStore.ts"
import type { ContactStore } from "../ports/ContactStore.ts"
import type { OutboxStore } from "../ports/OutboxStore.ts"
import type { TenantStore } from "../ports/TenantStore.ts"
import type { Transactor } from "../ports/Transactor.ts"
import { tenantRoutes } from "../tenants/TenantRoutes.ts"
import { TenantService } from "../tenants/TenantService.ts"

/** The ports a storage adapter must provide. */
export type StoragePorts = Transactor | TenantStore | AccountStore | ApiKeyStore | ContactStore | OutboxStore

/** Every service of the library. */
export type Services = ApiKeyAuth | TenantService | ContactService | Operator | BackgroundWork

/** Every service of the library over the given storage ports. */
export const servicesLayer: Layer.Layer<Services, never, StoragePorts> = Layer.mergeAll(
  ApiKeyAuth.layer,
  ContactService.layer,
  Operator.layer,
  Layer.succeed(BackgroundWork, BackgroundWork.of({ jobs: [] }))
).pipe(Layer.provideMerge(TenantService.layer))

/** Every route of the `/api/v1` surface. */
export const routes: ReadonlyArray<Route<Services>> = [...tenantRoutes, ...contactRoutes]

/** The package version, shown in the OpenAPI document. */
export const VERSION = "0.1.0"

/** What `make` needs: storage, and optionally a clock and where the API is mounted. */
export interface OmnichannelOptions<E> extends ApiHandlerOptions {
  /** The storage ports, e.g. `KyselyStorage.layer(db, "postgres")` from `omnichannel-core/kysely`. */
  readonly storage: Layer.Layer<StoragePorts, E>
  /** Replaces the wall clock (the reference host's manual test clock). */
  readonly clock?: Clock.Clock
}

/** A running instance of the library, for hosts that are not written with Effect. */
export interface Omnichannel {
  /** The `/api/v1` handler: `(Request) => Promise<Response>`. */
  readonly handler: ApiHandler
  /** Runs an Effect program against the library's services and ports (operator commands, custom use cases). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Services | StoragePorts>) => Promise<A>
  /** Runs every piece of background work that is due now, until nothing is; resolves to the units done. */
  readonly drainDueWork: () => Promise<number>
  /** Releases everything the storage layer acquired (closes a database it opened). */
  readonly dispose: () => Promise<void>
}

/** Starts the library over the given storage: builds the services and the HTTP handler. */
export const make = async <E>(options: OmnichannelOptions<E>): Promise<Omnichannel> => {
  const layer = servicesLayer.pipe(Layer.provideMerge(options.storage))
  // Clock is read from the running fiber's context, so placing it in the runtime reaches every service.
  const runtime = ManagedRuntime.make(
    options.clock === undefined ? layer : Layer.merge(layer, Layer.succeed(Clock.Clock, options.clock))
  )
  try {
    const handler = await runtime.runPromise(makeApiHandler(routes, { ...options, title: "omnichannel-core", version: VERSION }))
    return {
      handler,
      run: (effect) => runtime.runPromise(effect),
      drainDueWork: () => runtime.runPromise(Effect.flatMap(BackgroundWork, (work) => drainDueWork(work.jobs))),
      dispose: () => runtime.dispose()
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
