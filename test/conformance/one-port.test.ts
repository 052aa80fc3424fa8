import { Layer } from "effect"
import { expectTypeOf, it } from "vitest"
import { KyselyConnection } from "../../adapters/kysely/Connection.ts"
import { migrate, openSqlite } from "../../adapters/kysely/KyselyStorage.ts"
import { accountStoreLayer } from "../../adapters/kysely/stores/AccountStoreKysely.ts"
import { contactStoreLayer } from "../../adapters/kysely/stores/ContactStoreKysely.ts"
import { tenantStoreLayer } from "../../adapters/kysely/stores/TenantStoreKysely.ts"
import type { AccountStore } from "../../src/ports/AccountStore.ts"
import type { ContactStore } from "../../src/ports/ContactStore.ts"
import type { TenantStore } from "../../src/ports/TenantStore.ts"
import { contactStoreSuite, type StoredRows } from "./index.ts"
import { kyselyStoredRows } from "./KyselyStoredRows.ts"

// An adapter author who has written only contacts (and the tenants and accounts contacts belong to)
// runs the contacts suite alone: no outbox, no transactor, no other port, and one reader.
contactStoreSuite("ContactStore alone, on Kysely stores built one by one", async () => {
  const db = openSqlite(":memory:")
  await migrate(db, "sqlite")
  const connection = Layer.succeed(KyselyConnection, KyselyConnection.of({ db, dialect: "sqlite" }))
  return {
    layer: Layer.mergeAll(contactStoreLayer, tenantStoreLayer, accountStoreLayer).pipe(Layer.provide(connection)),
    capabilities: { concurrentConnections: false },
    storedRows: { contacts: kyselyStoredRows(db).contacts },
    close: () => db.destroy()
  }
})

/** What the contacts suite asks of an adapter, as its type says. */
type ContactsAdapter = Awaited<ReturnType<Parameters<typeof contactStoreSuite>[1]>>

// Checked by `npm run typecheck`: the suite's type tells the author what their adapter lacks.
it("tells the author, at compile time, which ports the layer and which readers the adapter must provide", () => {
  // The suite seeds the tenants contacts belong to, so ContactStore alone is not enough.
  expectTypeOf<Layer.Layer<ContactStore>>().not.toExtend<ContactsAdapter["layer"]>()
  expectTypeOf<Layer.Layer<ContactStore | TenantStore | AccountStore>>().toExtend<ContactsAdapter["layer"]>()
  // It reads contacts where they are stored, and nothing else.
  expectTypeOf<{}>().not.toExtend<ContactsAdapter["storedRows"]>()
  expectTypeOf<Pick<StoredRows, "contacts">>().toExtend<ContactsAdapter["storedRows"]>()
})
