import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { stateOf, transition } from "../../../src/campaigns/CampaignMachine.ts"
import { type CampaignRecord, CampaignStore } from "../../../src/ports/CampaignStore.ts"
import { campaignRecord } from "../../conformance/Fixtures.ts"
import { testDatabases } from "../../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../../support/TestApp.ts"

// Issue 28's first race: a POST /pause landing while the engine runs a round used to be overwritten
// by the round's whole-row save of the campaign it had read, and the campaign kept sending. Now
// the pause is one write under the status it read, and the round's end is a write expecting
// `sending`: whichever lands second after a pause changes nothing.

const databases = testDatabases.filter((database) => database.name === "sqlite-memory" || database.name === "postgres")
const HOUR = 60 * 60 * 1000

describe.each(databases)("a pause during a sending round ($name)", (database) => {
  let test: TestApp
  beforeAll(async () => {
    test = await startTestApp(await database.open())
  })
  afterAll(() => test?.close())

  const stored = (tenantId: string, id: string) =>
    test.app.run(CampaignStore.use((s) => s.get(tenantId, id))).then(Option.getOrThrow)

  it("stands: the round's end, decided on the campaign as it read it, writes nothing, and the campaign is not due again", async () => {
    const { api_key: key, tenant_id: tenantId } = await bootstrap(test, "pause-race@example.com")
    const now = test.clock.nowMillis()
    const iso = (ms: number) => new Date(ms).toISOString()
    // Sending, started an hour ago; its next look is far enough ahead that the running engine leaves it to this test.
    const sending: CampaignRecord = campaignRecord(tenantId, {
      status: "sending",
      audience_size: 1_000,
      started_at: iso(now - HOUR),
      next_run_at: iso(now + HOUR),
      created_at: iso(now - 2 * HOUR)
    })
    await test.app.run(CampaignStore.use((s) => s.insert(sending)))

    // The engine's round began with the campaign as it read it.
    const read = await stored(tenantId, sending.id)
    // Meanwhile the user pauses.
    const paused = await test.call("POST", `/campaigns/${sending.id}/pause`, { token: key })
    expect(paused.status).toBe(200)
    expect(paused.body).toMatchObject({ status: "paused", throttle_reason: null, next_batch_at: null })
    // The round ends with a full page sent: the machine, on what the round read, wants the next page now.
    const { intents } = transition(stateOf(read), {
      _tag: "RoundFinished",
      now: now + 1_000,
      round: { restricted: false, backoff: null, limited: false, fullPage: true, pendingLeft: true, nextBatchAt: null, inDoubtUntil: null }
    })
    expect(intents).toEqual([{ _tag: "Write", expected: ["sending"], set: { throttle_reason: null, next_run_at: now + 1_000 } }])
    const write = intents[0]!
    if (write._tag !== "Write") throw new Error("expected the round's write")
    const wrote = await test.app.run(CampaignStore.use((s) =>
      s.transition(tenantId, sending.id, { expected: write.expected, set: { next_run_at: iso(now + 1_000), throttle_reason: null, updated_at: iso(now + 1_000) } })
    ))

    expect(wrote).toBe(false)
    const after = await test.call("GET", `/campaigns/${sending.id}`, { token: key })
    expect(after.body).toMatchObject({ status: "paused", throttle_reason: null, next_batch_at: null, paused_at: paused.body.paused_at })
    expect(await stored(tenantId, sending.id)).toMatchObject({ status: "paused", next_run_at: null })
    // Nothing due: no claim takes it, whatever the time.
    const claims = await test.app.run(CampaignStore.use((s) =>
      s.claimDue({ now: iso(now + 1_000 * HOUR), leaseUntil: iso(now + 1_001 * HOUR), limit: 1_000, holder: "pause-race" })
    ))
    expect(claims.map((c) => c.campaign.id)).not.toContain(sending.id)
    await test.app.run(Effect.forEach(claims, (c) => CampaignStore.use((s) => s.release(c.campaign.tenant_id, c.campaign.id, c.holder)), { discard: true }))
  })
})
