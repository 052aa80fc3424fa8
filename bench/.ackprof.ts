import { spawn } from "node:child_process"
import { createHmac } from "node:crypto"
import { mkdtempSync, readdirSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Pool } from "undici"
import { summarizeProfile } from "./Profile.ts"

const secret = "s3cret"
const dir = mkdtempSync(join(tmpdir(), "ackprof-"))
const profDir = join(dir, "prof")
const env = { ...process.env, DATABASE_URL: process.argv[2] ?? `file:${join(dir, "db.sqlite")}`, OMNI_DATA_DIR: dir, OMNI_CHATAPP_APP_SECRET: secret,
  OMNI_CHATAPP_VERIFY_TOKEN: "v", OMNI_CHATAPP_GRAPH_URL: "", OMNI_METRICS: "", OTEL_EXPORTER_OTLP_ENDPOINT: "", OMNI_TEST_CLOCK: "", OMNI_WORKERS: "0", HOST: "127.0.0.1", PORT: "0" }
const child = spawn(process.execPath, ["--cpu-prof", `--cpu-prof-dir=${profDir}`, "--import", "tsx", "examples/server/main.ts"], { env, stdio: ["ignore", "pipe", "inherit"] })
const url = await new Promise<string>((resolve) => { let out = ""; child.stdout.on("data", (c) => { out += c; const m = /listening on (\S+)/.exec(out); if (m) resolve(m[1]!) }) })
child.stdout.resume()
const pool = new Pool(url, { connections: 64 })
const N = Number(process.argv[3] ?? 20000)
const bodies = Array.from({ length: N }, (_, i) => JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: "1", changes: [{ field: "messages", value: { messaging_product: "whatsapp", metadata: { display_phone_number: "1", phone_number_id: "106540352242923" }, contacts: [{ profile: { name: "A" }, wa_id: "447700900" + i }], messages: [{ from: "447700900" + i, id: "wamid." + i, timestamp: "1764150000", type: "text", text: { body: "hello " + i } }] } }] }] }))
let next = 0
const started = performance.now()
await Promise.all(Array.from({ length: 64 }, async () => {
  while (next < N) {
    const body = bodies[next++]!
    const sig = "sha256=" + createHmac("sha256", secret).update(body).digest("hex")
    const r = await pool.request({ method: "POST", path: "/webhooks/chatapp", headers: { "content-type": "application/json", "x-hub-signature-256": sig }, body })
    await r.body.dump()
    if (r.statusCode !== 200) throw new Error(String(r.statusCode))
  }
}))
console.log(`${(N / ((performance.now() - started) / 1000)).toFixed(0)} payloads/s`)
await pool.close()
child.kill("SIGTERM")
await new Promise((r) => child.once("exit", r))
const file = readdirSync(profDir)[0]!
const profile = JSON.parse(readFileSync(join(profDir, file), "utf8"))
const lines = summarizeProfile(profile, [["effect", /node_modules\/effect\//], ["undici/web", /node:internal\/(deps\/undici|webstreams)|undici/], ["sqlite", /kysely|better-sqlite3/], ["src", /\/src\//], ["adapters", /\/adapters\//], ["examples", /\/examples\//], ["node http/net", /node:(_http|internal\/http|net|internal\/stream_base|internal\/streams|stream|events)/]])
console.log(lines.slice(0, 90).join("\n"))
