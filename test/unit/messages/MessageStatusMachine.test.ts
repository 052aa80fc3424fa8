import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { applyStatus, nextOutboundStatus, type StatusReport, type StatusState } from "../../../src/messages/MessageStatusMachine.ts"

const at = (n: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, n)).toISOString()
const pending: StatusState = { status: "pending", sent_at: null, delivered_at: null, read_at: null, failed_at: null, error: null }
const report = (status: StatusReport["status"], n: number): StatusReport => ({
  status,
  at: at(n),
  error: status === "failed" ? { code: 131026, title: "Message undeliverable", message: "Message undeliverable", details: null } : null
})
const run = (state: StatusState, reports: ReadonlyArray<StatusReport>) =>
  reports.reduce((s, r) => applyStatus(s, r).state, state)

describe("one test per transition", () => {
  it("pending → sent → delivered → read, each filling its time", () => {
    const s = run(pending, [report("sent", 1), report("delivered", 2), report("read", 3)])
    expect(s).toMatchObject({ status: "read", sent_at: at(1), delivered_at: at(2), read_at: at(3) })
  })
  it("a read before delivered moves to read; the late delivered fills its time and does not move it back", () => {
    const early = run(pending, [report("sent", 1), report("read", 3)])
    expect(early.status).toBe("read")
    const late = applyStatus(early, report("delivered", 2))
    expect(late.changed).toBe(true)
    expect(late.state).toMatchObject({ status: "read", delivered_at: at(2) })
  })
  it("a status twice changes nothing the second time", () => {
    const once = run(pending, [report("sent", 1), report("read", 3)])
    expect(applyStatus(once, report("read", 4))).toEqual({ state: once, changed: false })
  })
  it("failed while sent moves to failed with the operator's error; after delivered it is ignored", () => {
    const failed = applyStatus(run(pending, [report("sent", 1)]), report("failed", 2))
    expect(failed.state).toMatchObject({ status: "failed", failed_at: at(2), error: { code: 131026 } })
    const delivered = run(pending, [report("sent", 1), report("delivered", 2)])
    expect(applyStatus(delivered, report("failed", 3))).toEqual({ state: delivered, changed: false })
  })
  it("nothing moves a failed message or an inbound one", () => {
    const failed = run(pending, [report("failed", 1)])
    expect(applyStatus(failed, report("read", 2)).changed).toBe(false)
    const received: StatusState = { ...pending, status: "received" }
    expect(applyStatus(received, report("read", 2)).changed).toBe(false)
  })
})

// The model: the furthest of sent/delivered/read reported wins, unless a failure came while nothing
// past `sent` had been reported; a status's time is the first report of it.
const RANK = { pending: 0, sent: 1, delivered: 2, read: 3 } as const
const model = (reports: ReadonlyArray<StatusReport>) => {
  let status: "pending" | "sent" | "delivered" | "read" | "failed" = "pending"
  const times: { sent: string | null; delivered: string | null; read: string | null; failed: string | null } = {
    sent: null,
    delivered: null,
    read: null,
    failed: null
  }
  for (const r of reports) {
    if (status === "failed") break
    if (r.status === "failed") {
      if (RANK[status] < 2) {
        status = "failed"
        times.failed = r.at
      }
      continue
    }
    times[r.status as "sent" | "delivered" | "read"] ??= r.at
    if (RANK[r.status] > RANK[status]) status = r.status
  }
  return { status, ...times }
}

describe("random orders and repeats of statuses", () => {
  it("the machine agrees with the model: never backwards, repeats change nothing", () => {
    const reports = fc.array(
      fc.record({ status: fc.constantFrom("sent", "delivered", "read", "failed"), n: fc.integer({ min: 0, max: 59 }) }),
      { maxLength: 12 }
    )
    fc.assert(fc.property(reports, (list) => {
      const rs = list.map((r) => report(r.status as StatusReport["status"], r.n))
      const s = run(pending, rs)
      const m = model(rs)
      expect(s.status).toBe(m.status)
      expect({ sent: s.sent_at, delivered: s.delivered_at, read: s.read_at, failed: s.failed_at }).toEqual({
        sent: m.sent,
        delivered: m.delivered,
        read: m.read,
        failed: m.failed
      })
      // Applying the same reports again changes nothing.
      expect(run(s, rs)).toEqual(s)
    }), { numRuns: 2000 })
  })
})

describe("a record that follows a message by its status alone (a campaign's recipient)", () => {
  it("ends where its message ends, whatever the order and repeats of the statuses", () => {
    const statuses = fc.array(fc.constantFrom("sent", "delivered", "read", "failed") as fc.Arbitrary<StatusReport["status"]>, { maxLength: 12 })
    fc.assert(fc.property(fc.constantFrom("pending", "sending") as fc.Arbitrary<"pending" | "sending">, statuses, (start, list) => {
      let follower: Parameters<typeof nextOutboundStatus>[0] = start
      for (const status of list) follower = nextOutboundStatus(follower, status) ?? follower
      const message = run(pending, list.map((status, n) => report(status, n)))
      expect(follower === "sending" ? "pending" : follower).toBe(message.status)
    }), { numRuns: 2000, seed: 28 })
  })

  it("failed after read or delivered moves nothing; a skipped recipient never moves", () => {
    expect(nextOutboundStatus("read", "failed")).toBeNull()
    expect(nextOutboundStatus("delivered", "failed")).toBeNull()
    expect(nextOutboundStatus("sent", "failed")).toBe("failed")
    expect(nextOutboundStatus("sending", "delivered")).toBe("delivered")
    expect(nextOutboundStatus("read", "delivered")).toBeNull()
    expect(nextOutboundStatus("skipped", "sent")).toBeNull()
  })
})
