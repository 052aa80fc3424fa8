import { layer } from "../../adapters/kysely/KyselyStorage.ts"
import { testDatabases } from "../support/Databases.ts"
import { storageConformance } from "./index.ts"
import { kyselyStoredRows } from "./KyselyStoredRows.ts"

// One Kysely adapter, every database it serves: the whole suite on each.
for (const database of testDatabases) {
  storageConformance(`Kysely storage on ${database.name}`, async () => {
    const opened = await database.open()
    return {
      layer: layer(opened.db, opened.dialect),
      capabilities: { concurrentConnections: opened.concurrentConnections },
      storedRows: kyselyStoredRows(opened.db),
      close: opened.close
    }
  })
}
