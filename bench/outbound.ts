/**
 * Keep-alive HTTPS POSTs per second to a local receiver: the guarded outbound client against bare
 * loops with the same pool size in the same process, one with `https.request` and one with undici's
 * pool, the client the guarded one is built on (so their ratio is the guard's own cost).
 *
 *   npx tsx bench/outbound.ts [requests=5000] [concurrency=64]
 */
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { performance } from "node:perf_hooks"
import * as tls from "node:tls"
import { Effect } from "effect"
import { Pool } from "undici"
import { makeGuardedHttp } from "../adapters/http/GuardedHttp.ts"
import { makeCertificate } from "../test/outbound/LocalServers.ts"

const requests = Number(process.argv[2] ?? 5_000)
const concurrency = Number(process.argv[3] ?? 64)
const body = JSON.stringify({ id: "evt_123", type: "message.created", data: { text: "x".repeat(400) } })
const headers = { "content-type": "application/json", "x-omni-signature": "t=1700000000,v1=0123456789abcdef" }

const certificate = makeCertificate()
const server = https.createServer(certificate, (req, res) => {
  req.resume()
  req.on("end", () => res.end("ok"))
})
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
const { port } = server.address() as AddressInfo
const url = `https://localhost:${port}/hook`

const guarded = makeGuardedHttp({ allow: [`localhost:${port}`], ca: certificate.cert })
const runGuarded = (count: number) =>
  Effect.runPromise(
    Effect.forEach(
      Array.from({ length: count }),
      () => guarded.request({ method: "POST", url, headers, body, timeoutMs: 10_000 }),
      { concurrency, discard: true }
    )
  )

const bareAgent = new https.Agent({
  keepAlive: true,
  maxSockets: 64,
  // As the guarded client does: a `ca` option would be folded into the pool key on every request.
  secureContext: tls.createSecureContext({ ca: [...tls.getCACertificates("default"), certificate.cert] })
})
const barePost = () =>
  new Promise<void>((resolve, reject) => {
    const req = https.request(
      { agent: bareAgent, method: "POST", host: "localhost", port, path: "/hook", headers: { ...headers, "content-length": Buffer.byteLength(body) } },
      (res) => {
        res.on("data", () => {})
        res.on("end", resolve)
      }
    )
    req.on("error", reject)
    req.end(body)
  })
const runBare = async (count: number) => {
  let next = 0
  const worker = async () => {
    while (next++ < count) await barePost()
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

const undiciPool = new Pool(`https://localhost:${port}`, {
  connections: 64,
  pipelining: 1,
  connect: { secureContext: tls.createSecureContext({ ca: [...tls.getCACertificates("default"), certificate.cert] }) }
})
const runUndici = async (count: number) => {
  let next = 0
  const worker = async () => {
    while (next++ < count) {
      const response = await undiciPool.request({ method: "POST", path: "/hook", headers, body })
      await response.body.dump()
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}

const perSecond = async (run: (count: number) => Promise<void>) => {
  const started = performance.now()
  await run(requests)
  return requests / ((performance.now() - started) / 1000)
}

const contenders = [
  ["guarded client", runGuarded],
  ["bare https.request", runBare],
  ["bare undici pool", runUndici]
] as const
// Warm up every path (JIT, TLS sessions, pooled sockets) before measuring.
for (const [, run] of contenders) await run(2_000)
const rounds = contenders.map(() => [] as Array<number>)
for (let round = 0; round < 5; round++) {
  for (const [index, [, run]] of contenders.entries()) rounds[index]!.push(await perSecond(run))
}

const median = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const rates = rounds.map(median)
console.log(`${requests} keep-alive HTTPS POSTs, concurrency ${concurrency}, median of ${rounds[0]!.length} rounds`)
for (const [index, [name]] of contenders.entries()) {
  console.log(`${`${name}:`.padEnd(20)} ${rates[index]!.toFixed(0)} req/s (rounds: ${rounds[index]!.map((r) => r.toFixed(0)).join(", ")})`)
}
console.log(`ratio guarded / bare https.request: ${(rates[0]! / rates[1]!).toFixed(2)}`)
console.log(`ratio guarded / bare undici pool:   ${(rates[0]! / rates[2]!).toFixed(2)}`)

await guarded.close()
await undiciPool.close()
bareAgent.destroy()
server.closeAllConnections()
server.close()
