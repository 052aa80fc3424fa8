/**
 * Embedding omnichannel-core in an ordinary Node web app that owns its PostgreSQL pool and its
 * Kysely instance. The app keeps its own routes and mounts the messaging API under `/messaging`.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test PORT=4000 npx tsx examples/embed/server.ts
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { Kysely, PostgresDialect } from "kysely"
import { make } from "omnichannel-core"
import { type Database, layer, migrate } from "omnichannel-core/kysely"
import { nodeHmacSigner, toCheckContinueListener, toNodeListener } from "omnichannel-core/node"
import { simulatedProviders } from "omnichannel-core/providers"
import pg from "pg"

const databaseUrl = process.env.DATABASE_URL
if (databaseUrl === undefined || !databaseUrl.startsWith("postgres")) {
  console.error("set DATABASE_URL to a postgres:// URL")
  process.exit(1)
}

// The application's own pool and query builder; the library only borrows them.
const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 })
const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
await migrate(db, "postgres")

const port = Number(process.env.PORT ?? 4000)
let origin = `http://127.0.0.1:${port}`
const messaging = await make({
  // `listen`: workers of this and other processes hear of committed events at once (LISTEN/NOTIFY).
  storage: layer(db, "postgres", { listen: databaseUrl }),
  basePath: "/messaging/api/v1",
  providers: simulatedProviders,
  // Signs webhook deliveries with node:crypto on the calling thread (the default, WebCrypto, works everywhere).
  signer: nodeHmacSigner,
  publicUrl: () => origin,
  connectPath: "/messaging/connect"
})
const messagingListener = toNodeListener(messaging.handler)

const appListener = (req: IncomingMessage, res: ServerResponse) => {
  if (req.url?.startsWith("/messaging/")) return messagingListener(req, res)
  if (req.url === "/health") {
    // The app's own route, using the same pool.
    pool.query("select 1").then(
      () => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true })),
      () => res.writeHead(503).end()
    )
    return
  }
  res.writeHead(404, { "content-type": "text/plain" }).end("not found")
}
// A request not fully received within 30 s is answered 408; `100 Continue` waits until a body is read,
// so a request the library refuses (bad key, body too large) is answered before the client sends it.
const server = createServer({ requestTimeout: 30_000, headersTimeout: 30_000 }, appListener)
const messagingContinue = toCheckContinueListener(messagingListener)
server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
  if (req.url?.startsWith("/messaging/")) return messagingContinue(req, res)
  res.writeContinue()
  appListener(req, res)
})

server.listen(port, "127.0.0.1", () => {
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  console.log(`embedded app listening on ${origin}`)
})

process.on("SIGTERM", () => {
  server.close(async () => {
    await messaging.dispose()
    // The app owns the pool, so the app closes it.
    await db.destroy()
    process.exit(0)
  })
  server.closeIdleConnections()
})
