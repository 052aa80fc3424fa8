import type { ManualClock } from "omnichannel-core/clock"

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8" } })

/**
 * The `/_test` routes of HOST.md, present only with `OMNI_TEST_CLOCK=manual`: read the clock,
 * advance it (then drain due work), or drain without moving it. Anything else falls through.
 */
export const withTestClockRoutes = (
  clock: ManualClock,
  drain: () => Promise<number>,
  next: (request: Request) => Promise<Response>
) =>
async (request: Request): Promise<Response> => {
  const { pathname } = new URL(request.url)
  if (!pathname.startsWith("/_test/")) return next(request)
  const now = () => ({ now: new Date(clock.nowMillis()).toISOString() })
  if (pathname === "/_test/clock" && request.method === "GET") return json(200, now())
  if (pathname === "/_test/drain" && request.method === "POST") {
    const done = await drain()
    return json(200, { ...now(), work_done: done })
  }
  if (pathname === "/_test/clock/advance" && request.method === "POST") {
    let seconds: unknown
    try {
      seconds = ((await request.json()) as { seconds?: unknown }).seconds
    } catch {
      return json(422, { detail: [{ loc: ["body"], msg: "Send a JSON body {\"seconds\": N}", type: "json_invalid" }] })
    }
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0) {
      return json(422, { detail: [{ loc: ["body", "seconds"], msg: "Must be a number of seconds ≥ 0", type: "value_error" }] })
    }
    clock.advance(Math.round(seconds * 1000))
    const done = await drain()
    return json(200, { ...now(), work_done: done })
  }
  return json(404, { detail: { code: "not_found", message: "Not Found" } })
}
