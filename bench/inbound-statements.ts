/**
 * Where the inbound processor's time goes, statement by statement: the library in this process on a
 * SQLite file (Kysely's query log), N single-message payloads (default 2,000, 200 senders) posted
 * through the handler, then one drain of the background work, timed. Prints messages/s, the total
 * time inside SQLite and each statement's count and time, the costliest first.
 *
 *   npx tsx bench/inbound-statements.ts [N]
 */
import { createHmac } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Effect } from "effect"
import { Kysely, SqliteDialect } from "kysely"
import SqliteDatabase from "better-sqlite3"
import { make, Auth } from "../src/index.ts"
import { layer, migrate, type Database } from "../adapters/kysely/KyselyStorage.ts"
import { makeSimulatedChatPlatform, chatappProvider } from "../adapters/chatapp/index.ts"

const dir = mkdtempSync(join(tmpdir(), "inbound-statements-"))
const stats = new Map<string, { n: number; ms: number }>()
const raw = new SqliteDatabase(join(dir, "db.sqlite"))
raw.pragma("journal_mode = WAL"); raw.pragma("synchronous = NORMAL")
const db = new Kysely<Database>({
  dialect: new SqliteDialect({ database: raw }),
  log: (e) => {
    const k = e.query.sql.slice(0, 140)
    const s = stats.get(k) ?? { n: 0, ms: 0 }
    s.n++; s.ms += e.queryDurationMillis
    stats.set(k, s)
  }
})
await migrate(db, "sqlite")
const platform = makeSimulatedChatPlatform()
const app = await make({ storage: layer(db, "sqlite"), chatPlatform: platform, providers: { chatapp: chatappProvider(platform) }, chatappWebhook: { appSecret: "s", verifyToken: "v" } })
const boot: any = await app.run(Effect.flatMap(Auth.Operator, (o) => o.bootstrap({})))
await app.run(Effect.flatMap(Auth.Operator, (o) => o.createChannel({ tenantId: boot.tenant_id, type: "chatapp", inputs: { phone_number_id: "1234567", business_account_id: "7654321", access_token: "abcdefghijklmnopqrstuvwxyz" } })))
const N = Number(process.argv[2] ?? 2000)
for (let i = 0; i < N; i++) {
  const from = `4477009${String(i % 200).padStart(5, "0")}`
  const body = JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: "7654321", changes: [{ field: "messages", value: { messaging_product: "whatsapp", metadata: { display_phone_number: "1", phone_number_id: "1234567" }, contacts: [{ profile: { name: "A" }, wa_id: from }], messages: [{ from, id: `wamid.${i}`, timestamp: "1764150000", type: "text", text: { body: "hi" } }] } }] }] })
  const res = await app.handler(new Request("http://x/webhooks/chatapp", { method: "POST", body, headers: { "x-hub-signature-256": `sha256=${createHmac("sha256", "s").update(body).digest("hex")}` } }))
  if (res.status !== 200) throw new Error(String(res.status))
}
stats.clear()
const t0 = performance.now()
await app.drainDueWork()
const secs = (performance.now() - t0) / 1000
console.log(`${N} in ${secs.toFixed(2)} s = ${(N / secs).toFixed(0)}/s`)
const total = [...stats.values()].reduce((a, s) => a + s.ms, 0)
console.log(`sql time ${total.toFixed(0)} ms, statements ${[...stats.values()].reduce((a, s) => a + s.n, 0)}`)
for (const [k, s] of [...stats.entries()].sort((a, b) => b[1].ms - a[1].ms).slice(0, 25)) console.log(`${s.ms.toFixed(0).padStart(6)} ms ${String(s.n).padStart(6)} × ${k}`)
await app.dispose()
