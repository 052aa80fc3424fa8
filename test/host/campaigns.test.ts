import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DEFAULT_CAMPAIGN_ENGINE } from "../../src/campaigns/CampaignEngine.ts"
import { type ChatappHost, startChatappHost, type Tenant } from "../support/ChatappHost.ts"
import { graphError, statusesPayload } from "../support/FakeGraph.ts"
import { admin, type HostProcess, http } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// Campaigns seen from outside: the host as a child process on a manual test clock, a fake Graph
// server recording every template the host hands it (and answering with the operator's errors for
// chosen recipients), signed status webhooks, and nothing but HTTP to look at the result. Each
// scenario sends through numbers of its own, since the warm-up history and the messaging limit are
// kept per number.

const APP_SECRET = "campaigns-app-secret-for-tests"
const TOKEN = "EAAGcampaignstokenabcdefghijklmnopqrstuv"
const WABA_ID = "102290129390001"
const OTHER_WABA_ID = "102290129390002"
const UNKNOWN_ID = "0b6f1a52-3c1d-4e55-9a0f-8d6a2c1e9f00"
const NEW_YORK = "America/New_York"
const HOUR = 3_600_000
const DAY = 24 * HOUR
/** The fake operator's messaging limit (`TIER_1K`, its default answer for a number). */
const LIMIT = 1000
/** How long a test that sends hundreds or thousands may take on a busy machine. */
const SLOW = 120_000

/** The phone numbers (the operator's ids) of each scenario. */
const NUMBERS = {
  crud: "106540352290001",
  crudBare: "106540352290002",
  warmA: "106540352290003",
  warmB: "106540352290004",
  warmC: "106540352290005",
  ramp: "106540352290006",
  resume: "106540352290007",
  limit: "106540352290008",
  ops: "106540352290009",
  quality: "106540352290010",
  skip: "106540352290011",
  split: "106540352290012",
  optout: "106540352290013"
} as const
type NumberName = keyof typeof NUMBERS

/** The audience contacts C0…C3002: C{n} has phone phoneOf(n). */
const phoneOf = (i: number) => `+4915100${String(i).padStart(5, "0")}`
const digits = (phone: string) => phone.replace(/\D/g, "")
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i)

// ---------------------------------------------------------------------------------------------
// Zoned time, computed here independently of the host (Intl)

const wallOf = (ms: number, timeZone: string) => {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric"
    }).formatToParts(new Date(ms)).map((p) => [p.type, p.value])
  )
  return { y: Number(parts.year), m: Number(parts.month), d: Number(parts.day), hh: Number(parts.hour), mm: Number(parts.minute), ss: Number(parts.second) }
}
const offsetAt = (ms: number, timeZone: string) => {
  const w = wallOf(ms, timeZone)
  return Date.UTC(w.y, w.m - 1, w.d, w.hh, w.mm, w.ss) - Math.floor(ms / 1000) * 1000
}
/** The instant the wall clock of `timeZone` reads `hh:mm` on the local date `days` after `ms`'s local date. */
const localAt = (ms: number, days: number, hh: number, mm: number, timeZone: string) => {
  const w = wallOf(ms, timeZone)
  const wall = Date.UTC(w.y, w.m - 1, w.d + days, hh, mm)
  const first = wall - offsetAt(wall, timeZone)
  return wall - offsetAt(first, timeZone)
}
const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Connects a channel of `type` for `as` the way a customer does it, through a connect link (the
 * chat-app numbers with the fake operator's token), and returns its id.
 */
const connectChannel = async (h: ChatappHost, as: Tenant, type: string, inputs: Record<string, string>): Promise<string> => {
  const link = await h.api("POST", "/channel-connect-tokens", { allowed_channel_types: [type], max_uses: 1 }, as)
  expect(link.status, JSON.stringify(link.body)).toBe(201)
  const form = await fetch(`${link.body.connect_url}?type=${type}`)
  const html = await form.text()
  const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0]!
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
  const body = new URLSearchParams({ csrf, channel_type: type, ...inputs, ...(type === "chatapp" ? { access_token: TOKEN } : {}) })
  const done = await fetch(link.body.connect_url, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", cookie },
    body: body.toString()
  })
  const page = await done.text()
  expect(done.status, page).toBe(200)
  const channels = await h.api("GET", "/channels?page_size=100", undefined, as)
  const external = type === "chatapp" ? inputs.phone_number_id : inputs.bot_token!.split(":")[0]
  return (channels.body.items as Array<any>).find((c) => c.external_id === external)!.id as string
}

describe.each(hostBackends)("campaigns on the reference host ($name)", (backend) => {
  let h: ChatappHost
  let tenant: Tenant
  let other: Tenant
  const channel = {} as Record<NumberName, string>
  /** The adopted verification template on each number (one value: the code). */
  const template = {} as Record<NumberName, string>
  let otherChannelId: string
  let otherTemplateId: string
  /** A connected channel that is not a chat-app number. */
  let botChannelId: string
  /** Keys of the first tenant holding only these scopes: campaigns:read; campaigns:create and campaigns:update. */
  let reader: Tenant
  let writer: Tenant
  const lists = {} as Record<"ramp" | "warm" | "small" | "grow" | "resume" | "first150" | "second150" | "crud", string>

  const api = (method: string, path: string, body?: unknown, as: { key: string } = tenant) => h.api(method, path, body, as)
  const ok = async (method: string, path: string, body?: unknown, status = 200, as: { key: string } = tenant) => {
    const answer = await api(method, path, body, as)
    expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status)
    return answer.body
  }
  const drain = () => h.drain()
  const clock = async () => Date.parse((await http(h.host.url, "GET", "/_test/clock")).body.now)
  /** Moves the test clock to `ms` (never back) and runs the work then due. */
  const advanceTo = async (ms: number) => {
    const now = await clock()
    expect(ms).toBeGreaterThanOrEqual(now)
    await h.advance((ms - now) / 1000)
  }
  /** The `to` of every template send the operator received through `number`, from request index `from`. */
  const sendsTo = (number: NumberName, from = 0): Array<string> =>
    h.graph.requests().slice(from)
      .filter((r) => r.method === "POST" && r.path === `/${NUMBERS[number]}/messages`)
      .map((r) => String((r.json as { to?: unknown }).to))
  const mark = () => h.graph.requests().length
  /** Imports C{n} for each of `indexes` (confirmed opt-in) into `listIds`, in parallel chunks. */
  const importInto = async (indexes: ReadonlyArray<number>, listIds: ReadonlyArray<string>) => {
    const chunks: Array<ReadonlyArray<number>> = []
    for (let i = 0; i < indexes.length; i += 250) chunks.push(indexes.slice(i, i + 250))
    await Promise.all(chunks.map((chunk) => {
      const contacts = chunk.map((n) => ({ name: `C${n}`, phone: phoneOf(n) }))
      return ok("POST", "/contacts/import", { contacts, list_ids: listIds, optin_confirmed: true })
    }))
  }
  const baseCampaign = (number: NumberName, audience: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    name: `Campaign through ${number}`,
    channel_ids: [channel[number]],
    template_id: template[number],
    variable_values: ["482913"],
    audience,
    ...extra
  })
  const create = (number: NumberName, audience: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    ok("POST", "/campaigns", baseCampaign(number, audience, extra), 201)
  const stats = (id: string) => ok("GET", `/campaigns/${id}/statistics`)
  const campaign = (id: string) => ok("GET", `/campaigns/${id}`)
  let people = 0
  const newContact = async (fields: Record<string, unknown> = {}) => {
    const created = await ok("POST", "/contacts", { name: "Kim", phone: `+4916000${String(++people).padStart(6, "0")}`, ...fields }, 201)
    return created as { id: string; phone: string | null }
  }
  const newList = async (name: string, as: { key: string } = tenant) => (await ok("POST", "/lists", { name }, 201, as)).id as string
  const subscribe = (listId: string, contactId: string) => ok("POST", `/lists/${listId}/subscriptions`, { contact_id: contactId }, 201)
  const clockSeconds = async () => Math.floor((await clock()) / 1000)
  const statusWebhook = async (
    number: NumberName,
    statuses: ReadonlyArray<{ id: string; status: string; recipient_id: string; errors?: ReadonlyArray<Record<string, unknown>> }>
  ) => {
    const timestamp = String(await clockSeconds())
    const posted = await h.post({
      object: "whatsapp_business_account",
      entry: [{
        id: WABA_ID,
        changes: [{
          field: "messages",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: NUMBERS[number] },
            statuses: statuses.map((s) => ({ ...s, timestamp }))
          }
        }]
      }]
    })
    expect(posted.status, posted.body).toBe(200)
    await drain()
  }
  const stopMarketing = (number: NumberName, phone: string) => marketingPreference(number, phone, "stop")
  const marketingPreference = async (number: NumberName, phone: string, value: "stop" | "resume") => {
    const waId = digits(phone)
    const posted = await h.post({
      object: "whatsapp_business_account",
      entry: [{
        id: WABA_ID,
        changes: [{
          field: "user_preferences",
          value: {
            messaging_product: "whatsapp",
            metadata: { display_phone_number: "15551234567", phone_number_id: NUMBERS[number] },
            contacts: [{ profile: { name: "Kim" }, wa_id: waId }],
            user_preferences: [{
              wa_id: waId,
              detail: `User requested to ${value} marketing messages`,
              category: "marketing_messages",
              value,
              timestamp: await clockSeconds()
            }]
          }
        }]
      }]
    })
    expect(posted.status, posted.body).toBe(200)
    await drain()
  }
  /** The operator's id of the campaign message sent to `contactId`. */
  const wamidOf = async (contactId: string) => {
    const conversations = await ok("GET", `/conversations?contact_id=${contactId}`)
    const found: Array<any> = []
    for (const conversation of conversations.items) {
      found.push(...(await ok("GET", `/messages?conversation_id=${conversation.id}&page_size=100`)).items)
    }
    const sent = found.filter((m) => m.direction === "outbound" && m.status !== "failed")
    expect(sent).toHaveLength(1)
    return sent[0].external_id as string
  }

  const connect = (type: string, inputs: Record<string, string>, as: Tenant = tenant) => connectChannel(h, as, type, inputs)

  beforeAll(async () => {
    h = await startChatappHost(backend, { accessToken: TOKEN, appSecret: APP_SECRET })
    ;({ tenant, other } = h)
    const names = Object.keys(NUMBERS) as Array<NumberName>
    const [keys] = await Promise.all([
      Promise.all([
        admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "campaigns:read"),
        admin(h.env, "api-key", "create", "--tenant", tenant.id, "--scopes", "campaigns:create,campaigns:update")
      ]),
      (async () => {
        // Numbers are connected the way a customer does it: through a connect link.
        await Promise.all(names.map(async (name) => {
          channel[name] = await connect("chatapp", { phone_number_id: NUMBERS[name], business_account_id: WABA_ID })
        }))
        otherChannelId = await connect("chatapp", { phone_number_id: "106540352290099", business_account_id: OTHER_WABA_ID }, other)
        botChannelId = await connect("botchat", { bot_token: "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw" })
      })()
    ])
    // Pacing to the number's level (80 a second) has tests of its own (throughput.test.ts); here the
    // scenarios' numbers are paced at the host's rate, as `admin channel set-throughput` sets it, so
    // a ramp of 3,000 is not 40 s of waiting. The crud number keeps the operator's level.
    for (const name of names.filter((n) => n !== "crud" && n !== "crudBare")) {
      await admin(h.env, "channel", "set-throughput", "--tenant", tenant.id, "--channel", channel[name], "--per-second", "100000")
    }
    reader = { id: tenant.id, key: keys[0].api_key }
    writer = { id: tenant.id, key: keys[1].api_key }
    // The verification template, adopted (approved at once) on every number but crudBare.
    await Promise.all(names.filter((n) => n !== "crudBare").map(async (name) => {
      const adopted = await ok("POST", "/chatapp-templates/library/adopt", { channel_id: channel[name], library_template_name: "verification_code_1" }, 201)
      template[name] = adopted.id
    }))
    otherTemplateId = (await ok(
      "POST",
      "/chatapp-templates/library/adopt",
      { channel_id: otherChannelId, library_template_name: "verification_code_1" },
      201,
      other
    )).id
    for (const name of ["ramp", "warm", "small", "grow", "resume", "first150", "second150", "crud"] as const) lists[name] = await newList(`List ${name}`)
    // ramp: C0…C2999; warm: C0…C599; resume: C0…C799; grow: C1200…C1499 (C1500…C1749 join later);
    // first150: C2000…C2149; second150: C2150…C2299; small: C2300…C2599; crud: C3000…C3002.
    await Promise.all([
      importInto(range(0, 600), [lists.ramp, lists.warm, lists.resume]),
      importInto(range(600, 800), [lists.ramp, lists.resume]),
      importInto(range(800, 1200), [lists.ramp]),
      importInto(range(1200, 1500), [lists.ramp, lists.grow]),
      importInto(range(1500, 2000), [lists.ramp]),
      importInto(range(2000, 2150), [lists.ramp, lists.first150]),
      importInto(range(2150, 2300), [lists.ramp, lists.second150]),
      importInto(range(2300, 2600), [lists.ramp, lists.small]),
      importInto(range(2600, 3000), [lists.ramp])
    ])
    await importInto(range(3000, 3003), [lists.crud])
  }, 180_000)
  afterAll(() => h?.close())

  // -------------------------------------------------------------------------------------------
  // 1. Create, read, change; validation, tenants and scopes

  describe("create, read and change", () => {
    it("creates a draft with the defaults and reads it back, alone and in the newest-first list", async () => {
      const created = await create("crud", { list_ids: [lists.crud] })
      expect(created).toMatchObject({
        tenant_id: tenant.id,
        name: "Campaign through crud",
        status: "draft",
        throttle_reason: null,
        channel_ids: [channel.crud],
        template_id: template.crud,
        variable_values: ["482913"],
        audience: { list_ids: [lists.crud], contact_ids: [] },
        timezone: "UTC",
        skip_duplicates: true,
        split_sending: null,
        send_at: null,
        warmup_acknowledged: false,
        audience_size: null,
        next_batch_at: null,
        started_at: null,
        paused_at: null,
        completed_at: null,
        updated_at: null
      })
      expect(await campaign(created.id)).toEqual(created)
      await h.advance(1)
      const newer = await create("crud", { list_ids: [lists.crud] }, {
        name: "  Zoned  ",
        timezone: NEW_YORK,
        skip_duplicates: false,
        split_sending: { mode: "fixed", daily_batch: 2, send_time: "09:30" }
      })
      expect(newer).toMatchObject({ name: "Zoned", timezone: NEW_YORK, skip_duplicates: false, split_sending: { mode: "fixed", daily_batch: 2, send_time: "09:30" } })
      const listed = await ok("GET", "/campaigns?page_size=2")
      expect(listed.items.map((c: any) => c.id)).toEqual([newer.id, created.id])
      expect(listed.pagination).toMatchObject({ page: 1, page_size: 2 })
      expect(listed.pagination.total).toBeGreaterThanOrEqual(2)
      expect((await api("GET", `/campaigns/${UNKNOWN_ID}`)).status).toBe(404)
      expect((await api("GET", "/campaigns/not-an-id")).status).toBe(404)
    })

    it("refuses what cannot be sent: unknown or non-chat-app channels, a template missing on a number, wrong values, zone, split or audience", async () => {
      const base = baseCampaign("crud", { list_ids: [lists.crud] })
      const refused = async (body: Record<string, unknown>, status: number) => {
        const answer = await api("POST", "/campaigns", { ...base, ...body })
        expect(answer.status, JSON.stringify(answer.body)).toBe(status)
        return answer.body
      }
      const loc = (body: any) => body.detail[0].loc
      await refused({ channel_ids: [UNKNOWN_ID] }, 404)
      await refused({ channel_ids: [otherChannelId] }, 404)
      expect(await refused({ channel_ids: [botChannelId] }, 400)).toMatchObject({ detail: { code: "channel_unavailable", channel_id: botChannelId } })
      const bare = await refused({ channel_ids: [channel.crud, channel.crudBare] }, 422)
      expect(bare.detail[0]).toMatchObject({ loc: ["body", "channel_ids", 1], type: "template_not_on_channel" })
      const count = await refused({ variable_values: ["1", "2"] }, 422)
      expect(count.detail[0]).toMatchObject({ loc: ["body", "variable_values"], type: "value_count_mismatch" })
      expect(loc(await refused({ variable_values: [] }, 422))).toEqual(["body", "variable_values"])
      expect(loc(await refused({ variable_values: ["  "] }, 422))).toEqual(["body", "variable_values", 0])
      expect(loc(await refused({ timezone: "Mars/Olympus_Mons" }, 422))).toEqual(["body", "timezone"])
      expect(loc(await refused({ timezone: "+05:30" }, 422))).toEqual(["body", "timezone"])
      const fixed = await refused({ split_sending: { mode: "fixed" } }, 422)
      expect(fixed.detail[0]).toMatchObject({ loc: ["body", "split_sending", "daily_batch"], type: "missing" })
      expect(loc(await refused({ split_sending: { mode: "ramp", daily_batch: 100 } }, 422))).toEqual(["body", "split_sending", "daily_batch"])
      expect(loc(await refused({ split_sending: { mode: "ramp", send_time: "24:00" } }, 422))).toEqual(["body", "split_sending", "send_time"])
      expect(loc(await refused({ audience: {} }, 422))).toEqual(["body", "audience"])
      expect(loc(await refused({ audience: { list_ids: [], contact_ids: [] } }, 422))).toEqual(["body", "audience"])
      await refused({ audience: { list_ids: [UNKNOWN_ID] } }, 404)
      await refused({ template_id: UNKNOWN_ID }, 404)
      await refused({ template_id: otherTemplateId }, 404)
      expect(loc(await refused({ template_id: undefined }, 422))).toEqual(["body", "template_id"])
      expect((await refused({ channel_ids: [] }, 422)).detail[0].loc[1]).toBe("channel_ids")
      expect((await refused({ name: "" }, 422)).detail[0].loc[1]).toBe("name")
      // Nothing was stored by any of them.
      const names = (await ok("GET", "/campaigns?page_size=100")).items.map((c: any) => c.name)
      expect(names.every((n: string) => n === "Campaign through crud" || n === "Zoned")).toBe(true)
    })

    it("PATCH changes a draft or scheduled campaign and resets its warm-up confirmation; 409 once started", async () => {
      const created = await create("crud", { list_ids: [lists.crud] })
      const later = iso((await clock()) + HOUR)
      const scheduled = await ok("POST", `/campaigns/${created.id}/schedule`, { send_at: later, warmup_acknowledged: true })
      expect(scheduled).toMatchObject({ status: "scheduled", send_at: later, warmup_acknowledged: true, next_batch_at: later })
      const changed = await ok("PATCH", `/campaigns/${created.id}`, { name: "Renamed", variable_values: ["777777"] })
      expect(changed).toMatchObject({ name: "Renamed", variable_values: ["777777"], status: "scheduled", warmup_acknowledged: false, send_at: later })
      expect(changed.updated_at).not.toBeNull()
      // The same checks as on create.
      const bad = await api("PATCH", `/campaigns/${created.id}`, { timezone: "Nowhere/Special" })
      expect(bad.status).toBe(422)
      expect((await api("PATCH", `/campaigns/${created.id}`, { channel_ids: [channel.crudBare] })).status).toBe(422)
      expect((await api("PATCH", `/campaigns/${UNKNOWN_ID}`, { name: "x" })).status).toBe(404)
      // A send_at without an offset, or in the past, is refused.
      const naive = await api("POST", `/campaigns/${created.id}/schedule`, { send_at: later.replace("Z", "") })
      expect(naive.status).toBe(422)
      expect(naive.body.detail[0].loc).toEqual(["body", "send_at"])
      expect((await api("POST", `/campaigns/${created.id}/schedule`, { send_at: iso((await clock()) - 1000) })).status).toBe(422)

      // Three recipients: no confirmation needed; once sending, nothing can change.
      const before = mark()
      expect(await ok("POST", `/campaigns/${created.id}/send`, {})).toMatchObject({ status: "sending", send_at: null })
      expect((await api("PATCH", `/campaigns/${created.id}`, { name: "Too late" })).status).toBe(409)
      await drain()
      const done = await campaign(created.id)
      expect(done).toMatchObject({ name: "Renamed", status: "completed", throttle_reason: null, audience_size: 3, next_batch_at: null })
      expect(done.completed_at).not.toBeNull()
      expect(sendsTo("crud", before).sort()).toEqual(range(3000, 3003).map((n) => digits(phoneOf(n))))
      const payload = h.graph.requests().slice(before).find((r) => r.path === `/${NUMBERS.crud}/messages`)!.json as any
      expect(payload.template).toMatchObject({ name: "verification_code_1", language: { code: "en_US" } })
      expect(payload.template.components[0]).toEqual({ type: "body", parameters: [{ type: "text", text: "777777" }] })
      const conflict = await api("PATCH", `/campaigns/${created.id}`, { name: "Too late" })
      expect(conflict.status).toBe(409)
      expect((await api("POST", `/campaigns/${created.id}/send`, {})).status).toBe(409)
      expect((await api("POST", `/campaigns/${created.id}/schedule`, { send_at: iso((await clock()) + HOUR) })).status).toBe(409)
      expect((await api("POST", `/campaigns/${created.id}/pause`)).status).toBe(409)
      expect((await api("POST", `/campaigns/${created.id}/resume`, {})).status).toBe(409)
      const draft = await create("crud", { list_ids: [lists.crud] })
      expect((await api("POST", `/campaigns/${draft.id}/pause`)).status).toBe(409)
      expect((await api("POST", `/campaigns/${draft.id}/resume`, {})).status).toBe(409)
      expect(await stats(created.id)).toMatchObject({
        campaign_id: created.id,
        status: "completed",
        audience_size: 3,
        recipients: { pending: 0, sending: 0, sent: 3, delivered: 0, read: 0, failed: 0, skipped: 0 },
        skipped_by_reason: {},
        // The number reports the operator's default throughput level: 80 sends a second.
        throughput: [{ channel_id: channel.crud, per_second: 80 }]
      })
    })

    it("keeps campaigns inside their tenant", async () => {
      const mine = await create("crud", { list_ids: [lists.crud] })
      const as = other
      const calls: Array<[string, string, unknown?]> = [
        ["GET", `/campaigns/${mine.id}`],
        ["PATCH", `/campaigns/${mine.id}`, { name: "Theirs" }],
        ["POST", `/campaigns/${mine.id}/send`, { warmup_acknowledged: true }],
        ["POST", `/campaigns/${mine.id}/schedule`, { send_at: iso((await clock()) + HOUR), warmup_acknowledged: true }],
        ["POST", `/campaigns/${mine.id}/pause`],
        ["POST", `/campaigns/${mine.id}/resume`, {}],
        ["GET", `/campaigns/${mine.id}/warmup-check`],
        ["GET", `/campaigns/${mine.id}/statistics`]
      ]
      for (const [method, path, body] of calls) {
        expect((await api(method, path, body, as)).status, `${method} ${path}`).toBe(404)
      }
      expect((await ok("GET", "/campaigns?page_size=100", undefined, 200, other)).items).toEqual([])
      // Their own campaign cannot name our list or our template.
      const theirList = await newList("Theirs", other)
      const theirs = { name: "Theirs", channel_ids: [otherChannelId], template_id: otherTemplateId, variable_values: ["1"], audience: { list_ids: [theirList] } }
      expect((await api("POST", "/campaigns", { ...theirs, audience: { list_ids: [lists.crud] } }, other)).status).toBe(404)
      expect((await api("POST", "/campaigns", { ...theirs, template_id: template.crud }, other)).status).toBe(404)
      const created = await ok("POST", "/campaigns", theirs, 201, other)
      expect((await api("GET", `/campaigns/${created.id}`)).status).toBe(404)
      expect(await campaign(mine.id)).toMatchObject({ name: "Campaign through crud", status: "draft" })
    })

    it("needs campaigns:create to create, campaigns:update to change, send and pause, campaigns:read to read", async () => {
      const missing = (scope: string) => ({ status: 403, body: { detail: `Missing required permission(s): ${scope}` } })
      const body = baseCampaign("crud", { list_ids: [lists.crud] })
      const mine = await create("crud", { list_ids: [lists.crud] })
      expect(await api("POST", "/campaigns", body, reader)).toEqual(missing("campaigns:create"))
      expect(await api("PATCH", `/campaigns/${mine.id}`, { name: "x" }, reader)).toEqual(missing("campaigns:update"))
      expect(await api("POST", `/campaigns/${mine.id}/send`, {}, reader)).toEqual(missing("campaigns:update"))
      expect(await api("POST", `/campaigns/${mine.id}/schedule`, { send_at: iso((await clock()) + HOUR) }, reader)).toEqual(missing("campaigns:update"))
      expect(await api("POST", `/campaigns/${mine.id}/pause`, undefined, reader)).toEqual(missing("campaigns:update"))
      expect(await api("POST", `/campaigns/${mine.id}/resume`, {}, reader)).toEqual(missing("campaigns:update"))
      expect(await api("GET", "/campaigns", undefined, writer)).toEqual(missing("campaigns:read"))
      expect(await api("GET", `/campaigns/${mine.id}`, undefined, writer)).toEqual(missing("campaigns:read"))
      expect(await api("GET", `/campaigns/${mine.id}/warmup-check`, undefined, writer)).toEqual(missing("campaigns:read"))
      expect(await api("GET", `/campaigns/${mine.id}/statistics`, undefined, writer)).toEqual(missing("campaigns:read"))
      expect((await api("GET", `/campaigns/${mine.id}`, undefined, reader)).status).toBe(200)
      expect((await api("POST", "/campaigns", body, writer)).status).toBe(201)
      expect((await api("PATCH", `/campaigns/${mine.id}`, { name: "By writer" }, writer)).status).toBe(200)
      expect((await api("POST", "/campaigns", body, { key: "not-a-key" })).status).toBe(401)
      expect(await campaign(mine.id)).toMatchObject({ name: "By writer", status: "draft" })
    })
  })

  // -------------------------------------------------------------------------------------------
  // 2. Warm-up

  describe("warm-up", () => {
    it("a fresh number reaching 600 at once: the check says why, send answers 409 until confirmed, then all go out", async () => {
      const created = await create("warmA", { list_ids: [lists.warm] })
      const check = await ok("GET", `/campaigns/${created.id}/warmup-check`)
      expect(check).toEqual({
        requires_acknowledgement: true,
        channels: [{
          channel_id: channel.warmA,
          warming_up: true,
          reasons: ["connected_recently", "few_completed_campaigns", "few_campaign_messages"],
          messaging_limit: LIMIT,
          messaging_limit_known: true,
          quality_rating: "GREEN",
          audience: 600,
          first_batch: 600,
          requires_acknowledgement: true
        }]
      })
      const before = mark()
      for (const body of [{}, { warmup_acknowledged: false }]) {
        const refused = await api("POST", `/campaigns/${created.id}/send`, body)
        expect(refused.status).toBe(409)
        expect(refused.body).toEqual({ detail: { code: "warmup_acknowledgement_required", message: expect.any(String), warmup: check } })
      }
      const scheduled = await api("POST", `/campaigns/${created.id}/schedule`, { send_at: iso((await clock()) + HOUR) })
      expect(scheduled.status).toBe(409)
      expect(scheduled.body.detail.code).toBe("warmup_acknowledgement_required")
      await drain()
      expect(await campaign(created.id)).toMatchObject({ status: "draft", warmup_acknowledged: false })
      expect(sendsTo("warmA", before)).toEqual([])

      const sent = await ok("POST", `/campaigns/${created.id}/send`, { warmup_acknowledged: true })
      expect(sent).toMatchObject({ status: "sending", warmup_acknowledged: true })
      await drain()
      const to = sendsTo("warmA", before)
      expect(to).toHaveLength(600)
      expect(new Set(to)).toEqual(new Set(range(0, 600).map((n) => digits(phoneOf(n)))))
      expect(await stats(created.id)).toMatchObject({
        status: "completed",
        throttle_reason: null,
        audience_size: 600,
        recipients: { pending: 0, sending: 0, sent: 600, failed: 0, skipped: 0 },
        batches: [{ channel_id: channel.warmA, day: 0, planned_size: 600, sent: 600 }]
      })
    }, SLOW)

    it("split sending with a first batch of 250 needs no confirmation", async () => {
      const created = await create("warmB", { list_ids: [lists.warm] }, { split_sending: { mode: "ramp" } })
      const check = await ok("GET", `/campaigns/${created.id}/warmup-check`)
      expect(check.requires_acknowledgement).toBe(false)
      expect(check.channels[0]).toMatchObject({ warming_up: true, audience: 600, first_batch: 250, requires_acknowledgement: false })
      const before = mark()
      expect(await ok("POST", `/campaigns/${created.id}/send`, {})).toMatchObject({ status: "sending", warmup_acknowledged: false })
      await drain()
      expect(sendsTo("warmB", before)).toHaveLength(250)
      const now = await clock()
      expect(await campaign(created.id)).toMatchObject({ status: "sending", throttle_reason: "daily_batch_limit", next_batch_at: iso(now + DAY) })
      expect((await stats(created.id)).batches.map((b: any) => [b.day, b.planned_size, b.sent])).toEqual([[0, 250, 250], [1, 350, 0]])
      expect(await ok("POST", `/campaigns/${created.id}/pause`)).toMatchObject({ status: "paused", throttle_reason: null, next_batch_at: null })
      // Pausing twice changes nothing.
      expect(await ok("POST", `/campaigns/${created.id}/pause`)).toMatchObject({ status: "paused" })
    }, SLOW)

    it("a confirmed scheduled campaign goes out on time; one whose audience grew by more than 20% and 250 is held until confirmed again", async () => {
      const now = await clock()
      const sendAt = iso(now + HOUR)
      // On time: warmA has sent once and is still warming up; its audience did not change.
      const onTime = await create("warmA", { list_ids: [lists.small] })
      expect((await api("POST", `/campaigns/${onTime.id}/schedule`, { send_at: sendAt })).status).toBe(409)
      expect(await ok("POST", `/campaigns/${onTime.id}/schedule`, { send_at: sendAt, warmup_acknowledged: true }))
        .toMatchObject({ status: "scheduled", warmup_acknowledged: true, next_batch_at: sendAt })
      // Held: confirmed for 300, and 250 more subscribe before it goes.
      const grows = await create("warmC", { list_ids: [lists.grow] })
      expect((await ok("GET", `/campaigns/${grows.id}/warmup-check`)).channels[0]).toMatchObject({ audience: 300, requires_acknowledgement: true })
      await ok("POST", `/campaigns/${grows.id}/schedule`, { send_at: sendAt, warmup_acknowledged: true })
      // Held: confirmed, then edited.
      const edited = await create("warmC", { list_ids: [lists.warm] })
      await ok("POST", `/campaigns/${edited.id}/schedule`, { send_at: sendAt, warmup_acknowledged: true })
      expect(await ok("PATCH", `/campaigns/${edited.id}`, { name: "Edited after confirming" })).toMatchObject({ status: "scheduled", warmup_acknowledged: false })
      await importInto(range(1500, 1750), [lists.grow])

      const before = mark()
      await advanceTo(now + HOUR - 1000)
      expect(sendsTo("warmA", before)).toEqual([])
      expect(await campaign(onTime.id)).toMatchObject({ status: "scheduled" })
      await advanceTo(now + HOUR)
      expect(new Set(sendsTo("warmA", before))).toEqual(new Set(range(2300, 2600).map((n) => digits(phoneOf(n)))))
      expect(sendsTo("warmA", before)).toHaveLength(300)
      expect(await campaign(onTime.id)).toMatchObject({ status: "completed", started_at: sendAt })
      for (const held of [grows, edited]) {
        const got = await campaign(held.id)
        expect(got).toMatchObject({ status: "paused", throttle_reason: "warmup_acknowledgement_required", warmup_acknowledged: false, next_batch_at: null })
        expect(got.paused_at).toBe(sendAt)
      }
      expect(sendsTo("warmC", before)).toEqual([])
      expect(await stats(grows.id)).toMatchObject({ audience_size: 550, recipients: { pending: 550, sent: 0 } })
      // Time passing does not release them.
      await h.advance(2 * HOUR / 1000)
      expect(sendsTo("warmC", before)).toEqual([])

      const unconfirmed = await api("POST", `/campaigns/${grows.id}/resume`, {})
      expect(unconfirmed.status).toBe(409)
      expect(unconfirmed.body.detail.code).toBe("warmup_acknowledgement_required")
      expect(unconfirmed.body.detail.warmup.channels[0]).toMatchObject({ channel_id: channel.warmC, audience: 550, requires_acknowledgement: true })
      expect(await ok("POST", `/campaigns/${grows.id}/resume`, { warmup_acknowledged: true })).toMatchObject({ status: "sending", warmup_acknowledged: true })
      await drain()
      const to = sendsTo("warmC", before)
      expect(new Set(to)).toEqual(new Set(range(1200, 1750).map((n) => digits(phoneOf(n)))))
      expect(to).toHaveLength(550)
      expect(await stats(grows.id)).toMatchObject({ status: "completed", recipients: { pending: 0, sent: 550, failed: 0 } })
      expect(await campaign(edited.id)).toMatchObject({ status: "paused" })
    }, SLOW)
  })

  // -------------------------------------------------------------------------------------------
  // 5. The operator's answers and statuses

  describe("the operator's answers", () => {
    it("statuses move recipients; 131050 fails one and records the opt-out; a throughput refusal is sent again shortly, nobody failed for it", async () => {
      const list = await newList("Operator answers")
      const people = [] as Array<{ id: string; phone: string }>
      for (let i = 0; i < 6; i++) {
        const contact = await newContact()
        await subscribe(list, contact.id)
        people.push(contact as { id: string; phone: string })
      }
      const [fine, optedOut, limited, throttled, reads, also] = people as [typeof people[0], typeof people[0], typeof people[0], typeof people[0], typeof people[0], typeof people[0]]
      h.graph.scriptRecipient(optedOut.phone, graphError(400, {
        code: 131050,
        message: "(#131050) Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business"
      }))
      h.graph.scriptRecipient(limited.phone, graphError(400, { code: 130429, message: "(#130429) Rate limit hit" }))
      // A bare 429 without the operator's error object counts as a rate limit too.
      h.graph.scriptRecipient(throttled.phone, { status: 429, body: "Too Many Requests", headers: { "content-type": "text/plain" } })
      const created = await create("ops", { list_ids: [list] })
      const before = mark()
      await ok("POST", `/campaigns/${created.id}/send`, {})
      // The number's throughput refused two (130429, and a bare 429): the number holds a moment, in its
      // shared send slots, and the next round sends them again at once; nobody is failed for it.
      await drain()
      const to = sendsTo("ops", before)
      expect([...new Set(to)].sort()).toEqual(people.map((p) => digits(p.phone)).sort())
      expect(to.filter((t) => t === digits(limited.phone) || t === digits(throttled.phone))).toHaveLength(4)
      expect(to.filter((t) => t === digits(optedOut.phone))).toHaveLength(1)
      expect(await stats(created.id)).toMatchObject({
        status: "completed",
        recipients: { pending: 0, sending: 0, sent: 5, failed: 1, skipped: 0 }
      })
      const subscriptions = await ok("GET", `/contacts/${optedOut.id}/subscriptions`)
      expect(subscriptions.marketing_opt_outs).toEqual([
        { contact_id: optedOut.id, channel_id: channel.ops, source: "operator_error", opted_out_at: expect.any(String) }
      ])
      expect((await ok("GET", `/contacts/${fine.id}/subscriptions`)).marketing_opt_outs).toEqual([])


      // Statuses from the operator move them on (never back); the opted-out one stays failed.
      await statusWebhook("ops", [{ id: await wamidOf(fine.id), status: "delivered", recipient_id: digits(fine.phone) }])
      const readId = await wamidOf(reads.id)
      await statusWebhook("ops", [
        { id: readId, status: "delivered", recipient_id: digits(reads.phone) },
        { id: readId, status: "read", recipient_id: digits(reads.phone) }
      ])
      await statusWebhook("ops", [{ id: readId, status: "delivered", recipient_id: digits(reads.phone) }])
      expect((await stats(created.id)).recipients).toEqual({ pending: 0, sending: 0, sent: 3, delivered: 1, read: 1, failed: 1, skipped: 0 })
      await statusWebhook("ops", [{ id: await wamidOf(also.id), status: "failed", recipient_id: digits(also.phone) }])
      expect((await stats(created.id)).recipients).toMatchObject({ sent: 2, delivered: 1, read: 1, failed: 2 })
      // The opted-out contact is skipped by the next campaign through that number.
      const next = await create("ops", { contact_ids: [optedOut.id, fine.id] })
      const from = mark()
      await ok("POST", `/campaigns/${next.id}/send`, {})
      await drain()
      expect(sendsTo("ops", from)).toEqual([digits(fine.phone)])
      expect(await stats(next.id)).toMatchObject({ skipped_by_reason: { opted_out: 1 }, recipients: { sent: 1, skipped: 1 } })
    })

    it("a quality restriction (131048) pauses the campaign with that reason; resumed, the rest goes out", async () => {
      const list = await newList("Quality")
      const people = [] as Array<{ id: string; phone: string }>
      for (let i = 0; i < 3; i++) {
        const contact = await newContact()
        await subscribe(list, contact.id)
        people.push(contact as { id: string; phone: string })
      }
      h.graph.scriptRecipient(people[1]!.phone, graphError(400, { code: 131048, message: "(#131048) Spam rate limit hit" }))
      const created = await create("quality", { list_ids: [list] })
      const before = mark()
      await ok("POST", `/campaigns/${created.id}/send`, {})
      await drain()
      expect(await campaign(created.id)).toMatchObject({ status: "paused", throttle_reason: "quality_restricted", next_batch_at: null })
      // The refused one waits; a send not yet started when the refusal came waits with it, one already
      // under way is sent.
      const held = (await stats(created.id)).recipients
      expect(held).toMatchObject({ sending: 0, failed: 0 })
      expect(held.pending + held.sent).toBe(3)
      expect(held.pending).toBeGreaterThanOrEqual(1)
      await h.advance(DAY / 1000)
      expect(sendsTo("quality", before)).toHaveLength(held.sent + 1)
      expect(await ok("POST", `/campaigns/${created.id}/resume`, {})).toMatchObject({ status: "sending", throttle_reason: null })
      await drain()
      const to = sendsTo("quality", before)
      expect(to).toHaveLength(4)
      expect(to.filter((t) => t === digits(people[1]!.phone))).toHaveLength(2)
      expect(await stats(created.id)).toMatchObject({ status: "completed", recipients: { pending: 0, sent: 3, failed: 0 } })
    })

    it("131050 in a failed status records the marketing opt-out as a refused send does: the next campaign skips the contact", async () => {
      const [stopped, other] = [await newContact(), await newContact()] as Array<{ id: string; phone: string }>
      const first = await create("optout", { contact_ids: [stopped!.id, other!.id] })
      await ok("POST", `/campaigns/${first.id}/send`)
      await drain()
      expect(await stats(first.id)).toMatchObject({ status: "completed", recipients: { sent: 2 } })
      // The operator took both, then reports one failed for the opt-out and the other for another reason.
      const failures = [
        {
          id: await wamidOf(stopped!.id),
          status: "failed",
          recipient_id: digits(stopped!.phone),
          errors: [{
            code: 131050,
            title: "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business",
            message: "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business",
            error_data: { details: "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business" }
          }]
        },
        {
          id: await wamidOf(other!.id),
          status: "failed",
          recipient_id: digits(other!.phone),
          errors: [{ code: 131026, title: "Message undeliverable", message: "Message undeliverable" }]
        }
      ]
      await statusWebhook("optout", failures)
      expect((await stats(first.id)).recipients).toMatchObject({ sent: 0, failed: 2 })
      expect((await ok("GET", `/contacts/${stopped!.id}/subscriptions`)).marketing_opt_outs).toEqual([
        { contact_id: stopped!.id, channel_id: channel.optout, source: "operator_error", opted_out_at: expect.any(String) }
      ])
      expect((await ok("GET", `/contacts/${other!.id}/subscriptions`)).marketing_opt_outs).toEqual([])

      const next = await create("optout", { contact_ids: [stopped!.id, other!.id] })
      const from = mark()
      await ok("POST", `/campaigns/${next.id}/send`)
      await drain()
      expect(sendsTo("optout", from)).toEqual([digits(other!.phone)])
      expect(await stats(next.id)).toMatchObject({ skipped_by_reason: { opted_out: 1 }, recipients: { sent: 1, skipped: 1 } })

      // The contact resumes marketing messages; the operator then delivers the old failures again.
      // The opt-out was recorded once and stays lifted; the statuses change nothing a second time.
      await marketingPreference("optout", stopped!.phone, "resume")
      expect((await ok("GET", `/contacts/${stopped!.id}/subscriptions`)).marketing_opt_outs).toEqual([])
      await statusWebhook("optout", failures)
      expect((await ok("GET", `/contacts/${stopped!.id}/subscriptions`)).marketing_opt_outs).toEqual([])
      expect(await stats(first.id)).toMatchObject({ status: "completed", recipients: { sent: 0, failed: 2 } })
    })
  })

  // -------------------------------------------------------------------------------------------
  // Requests as a user sends them

  describe("requests as a user sends them", () => {
    /** A request with exactly these headers and body, as a client other than this suite's would send it. */
    const raw = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const response = await fetch(`${h.host.url}/api/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${tenant.key}`, ...headers },
        ...(body === undefined ? {} : { body })
      })
      return { status: response.status, body: await response.json() }
    }

    it("send, pause and resume take no body and no Content-Type; a body that is there must be JSON", async () => {
      const created = await create("crud", { list_ids: [lists.crud] })
      const later = iso((await clock()) + HOUR)
      await ok("POST", `/campaigns/${created.id}/schedule`, { send_at: later })
      expect(await ok("POST", `/campaigns/${created.id}/pause`)).toMatchObject({ status: "paused" })
      // The request of the defect: no body, no Content-Type.
      expect(await ok("POST", `/campaigns/${created.id}/resume`)).toMatchObject({ status: "scheduled", send_at: later, throttle_reason: null })
      await ok("POST", `/campaigns/${created.id}/pause`)
      // An empty body sent as JSON reads as {} too.
      expect(await raw("POST", `/campaigns/${created.id}/resume`, { "content-type": "application/json" }, "")).toMatchObject({
        status: 200,
        body: { status: "scheduled" }
      })
      // A body that is there still has to be JSON, and still has to be valid.
      expect(await raw("POST", `/campaigns/${created.id}/send`, { "content-type": "text/plain" }, "{}")).toEqual({
        status: 415,
        body: { detail: { code: "unsupported_media_type", message: "Content-Type must be application/json" } }
      })
      const unknownField = await raw("POST", `/campaigns/${created.id}/send`, { "content-type": "application/json" }, "{\"warmup\": true}")
      expect(unknownField.status).toBe(422)
      expect(unknownField.body.detail[0]).toMatchObject({ loc: ["body", "warmup"], type: "extra_forbidden" })
      // A body that is required is still required.
      expect((await raw("POST", `/campaigns/${created.id}/schedule`, {})).status).toBe(415)
      const before = mark()
      expect(await ok("POST", `/campaigns/${created.id}/send`)).toMatchObject({ status: "sending" })
      await drain()
      expect(await campaign(created.id)).toMatchObject({ status: "completed" })
      expect(sendsTo("crud", before)).toHaveLength(3)
    })

    it("refuses a fixed daily batch that cannot reach the audience in 60 days up front, naming the smallest batch that fits", async () => {
      const list = await newList("Split refused")
      await importInto(range(5000, 5060), [list])
      const fixed = (daily_batch: number) => ({ split_sending: { mode: "fixed", daily_batch } })
      // 60 recipients at 1 a day fit the 60 days; then the list grows to 100.
      const created = await create("split", { list_ids: [list] }, fixed(1))
      await importInto(range(5060, 5100), [list])
      const expected = {
        loc: ["body", "split_sending", "daily_batch"],
        type: "split_exceeds_60_days",
        msg: expect.stringMatching(/at most 60 days.*100 recipients.*100 days.*smallest daily_batch that fits is 2/s),
        ctx: { max_days: 60, days_needed: 100, recipients: 100, channel_id: channel.split, smallest_daily_batch: 2 }
      }
      for (const [path, body] of [["send", undefined], ["schedule", { send_at: iso((await clock()) + HOUR) }]] as const) {
        const refused = await api("POST", `/campaigns/${created.id}/${path}`, body)
        expect(refused.status, JSON.stringify(refused.body)).toBe(422)
        expect(refused.body.detail).toEqual([expected])
      }
      // Created or changed that way, it is refused as well; nothing was stored or started.
      const again = await api("POST", "/campaigns", baseCampaign("split", { list_ids: [list] }, fixed(1)))
      expect(again.status).toBe(422)
      expect(again.body.detail).toEqual([expected])
      expect((await api("PATCH", `/campaigns/${created.id}`, fixed(1))).body.detail).toEqual([expected])
      expect(await campaign(created.id)).toMatchObject({ status: "draft", audience_size: null })
      // The batch it names fits.
      await ok("PATCH", `/campaigns/${created.id}`, fixed(2))
      expect(await ok("POST", `/campaigns/${created.id}/send`)).toMatchObject({ status: "sending" })
      expect(await ok("POST", `/campaigns/${created.id}/pause`)).toMatchObject({ status: "paused" })
    })

    it("an audience grown past 60 days after the schedule was accepted: 60 days are planned and the rest skipped with that reason, never a silent pause", async () => {
      const list = await newList("Split grown")
      await importInto(range(5100, 5160), [list])
      const created = await create("split", { list_ids: [list] }, { split_sending: { mode: "fixed", daily_batch: 1 } })
      const sendAt = (await clock()) + HOUR
      await ok("POST", `/campaigns/${created.id}/schedule`, { send_at: iso(sendAt) })
      await importInto(range(5160, 5163), [list])
      const before = mark()
      await advanceTo(sendAt)
      expect(sendsTo("split", before)).toHaveLength(1)
      expect(await campaign(created.id)).toMatchObject({ status: "sending", throttle_reason: "daily_batch_limit", audience_size: 63 })
      const statistics = await stats(created.id)
      expect(statistics).toMatchObject({
        status: "sending",
        recipients: { pending: 59, sending: 0, sent: 1, failed: 0, skipped: 3 },
        skipped_by_reason: { split_exceeds_60_days: 3 }
      })
      expect(statistics.batches).toHaveLength(60)
      expect(statistics.batches.every((b: any) => b.planned_size === 1)).toBe(true)
      expect(await ok("POST", `/campaigns/${created.id}/pause`)).toMatchObject({ status: "paused" })
    })

    it("a channel that is not a usable chat-app number is refused alike on every route: 400 channel_unavailable", async () => {
      const unusable = { detail: { code: "channel_unavailable", channel_id: botChannelId, message: expect.stringMatching(/not a usable chat-app channel/) } }
      const refusedCampaign = await api("POST", "/campaigns", baseCampaign("crud", { list_ids: [lists.crud] }, { channel_ids: [botChannelId] }))
      expect(refusedCampaign).toEqual({ status: 400, body: unusable })
      const library = await api("GET", `/chatapp-templates/library?channel_id=${botChannelId}`)
      expect(library).toEqual({ status: 400, body: unusable })
      const contact = await newContact()
      const templateSend = await api("POST", `/chatapp-templates/${template.crud}/send`, { contact_id: contact.id, channel_id: botChannelId })
      expect(templateSend).toEqual({ status: 400, body: unusable })
    })
  })

  // -------------------------------------------------------------------------------------------
  // 6. Who is skipped

  it("skips unsubscribed, opted-out, unreachable, unknown and duplicate contacts, counting them by reason", async () => {
    const [a, b, c] = [await newList("Skip A"), await newList("Skip B"), await newList("Skip C")]
    const fine = await newContact()
    const twice = await newContact()
    const optedOut = await newContact()
    const optedOutElsewhere = await newContact()
    const noPhone = await newContact({ phone: undefined, email: "nophone@example.com" })
    const unsubscribed = await newContact()
    const neverSubscribed = await newContact()
    for (const contact of [fine, twice, optedOut, optedOutElsewhere, noPhone]) await subscribe(a, contact.id)
    await subscribe(b, twice.id)
    await subscribe(c, unsubscribed.id)
    await ok("DELETE", `/lists/${c}/subscriptions/${unsubscribed.id}`)
    await stopMarketing("skip", optedOut.phone!)
    await stopMarketing("ops", optedOutElsewhere.phone!)
    expect((await ok("GET", `/contacts/${optedOut.id}/subscriptions`)).marketing_opt_outs).toHaveLength(1)

    const created = await create("skip", {
      list_ids: [a, b],
      contact_ids: [unsubscribed.id, neverSubscribed.id, UNKNOWN_ID, fine.id]
    })
    const before = mark()
    await ok("POST", `/campaigns/${created.id}/send`, {})
    await drain()
    expect(sendsTo("skip", before).sort()).toEqual([fine, twice, optedOutElsewhere, neverSubscribed].map((p) => digits(p.phone!)).sort())
    expect(await stats(created.id)).toMatchObject({
      status: "completed",
      audience_size: 4,
      recipients: { pending: 0, sending: 0, sent: 4, failed: 0, skipped: 6 },
      skipped_by_reason: { duplicate: 2, opted_out: 1, unreachable: 1, unsubscribed: 1, not_found: 1 }
    })
    // With duplicate skipping off, a contact in two lists is a recipient twice.
    const again = await create("skip", { list_ids: [a, b] }, { skip_duplicates: false })
    const from = mark()
    await ok("POST", `/campaigns/${again.id}/send`, {})
    await drain()
    expect(sendsTo("skip", from).filter((to) => to === digits(twice.phone!))).toHaveLength(2)
    expect((await stats(again.id)).skipped_by_reason).toEqual({ opted_out: 1, unreachable: 1 })
  })

  // -------------------------------------------------------------------------------------------
  // 3. The messaging limit, resuming, and the ramp walked over days

  it("a second campaign through a number within 24 hours stops at its messaging limit: the rest stay pending, then go", async () => {
    // This number's tier allows 250 unique recipients a day.
    h.graph.number(NUMBERS.limit, { messaging_limit_tier: "TIER_250" })
    const start = await clock()
    const first = await create("limit", { list_ids: [lists.first150] })
    expect((await ok("GET", `/campaigns/${first.id}/warmup-check`)).channels[0]).toMatchObject({ messaging_limit: 250, audience: 150 })
    await ok("POST", `/campaigns/${first.id}/send`, {})
    await drain()
    expect(sendsTo("limit")).toHaveLength(150)
    await h.advance(HOUR / 1000)

    const second = await create("limit", { list_ids: [lists.second150] })
    const before = mark()
    await ok("POST", `/campaigns/${second.id}/send`, {})
    await drain()
    expect(sendsTo("limit", before)).toHaveLength(100)
    const held = await campaign(second.id)
    expect(held).toMatchObject({ status: "sending", throttle_reason: "chatapp_messaging_limit" })
    expect(Date.parse(held.next_batch_at)).toBeGreaterThan(await clock())
    expect(await stats(second.id)).toMatchObject({ recipients: { pending: 50, sending: 0, sent: 100, failed: 0 } })

    // Those already reached within the window do not count again: a third campaign to the first
    // audience goes out in full while the second still waits.
    const third = await create("limit", { list_ids: [lists.first150] })
    await ok("POST", `/campaigns/${third.id}/send`, {})
    await drain()
    expect(await stats(third.id)).toMatchObject({ status: "completed", recipients: { sent: 150, pending: 0 } })

    await h.advance(60)
    await h.advance(12 * HOUR / 1000)
    expect(sendsTo("limit", before)).toHaveLength(100 + 150)
    expect(await stats(second.id)).toMatchObject({ status: "sending", throttle_reason: "chatapp_messaging_limit", recipients: { pending: 50, failed: 0 } })
    // Everyone handed an hour after the start leaves the window 24 hours later.
    await advanceTo(start + HOUR + DAY + 1000)
    expect(await stats(second.id)).toMatchObject({ status: "completed", throttle_reason: null, recipients: { pending: 0, sent: 150, failed: 0 } })
    const to = sendsTo("limit", before)
    expect(to).toHaveLength(300)
    expect(new Set(to.slice(0, 100).concat(to.slice(250)))).toEqual(new Set(range(2150, 2300).map((n) => digits(phoneOf(n)))))
  }, SLOW)

  it("resumed after days paused, the ramp goes on with the next day's batch from the resume", async () => {
    const created = await create("resume", { list_ids: [lists.resume] }, { split_sending: { mode: "ramp" } })
    const before = mark()
    await ok("POST", `/campaigns/${created.id}/send`, {})
    await drain()
    expect(sendsTo("resume", before)).toHaveLength(250)
    await ok("POST", `/campaigns/${created.id}/pause`)
    // Two and a half days paused: the planned starts of days 1 and 2 pass unsent.
    await h.advance(2.5 * DAY / 1000)
    expect(sendsTo("resume", before)).toHaveLength(250)
    const resumedAt = await clock()
    await ok("POST", `/campaigns/${created.id}/resume`, {})
    await drain()
    const statistics = await stats(created.id)
    // The next day's size after the 250 is 500 (then the last 50 the day after), and every
    // recipient is planned once: the planned sizes add up to the audience.
    expect(statistics.batches.map((b: any) => [b.planned_size, b.sent])).toEqual([[250, 250], [500, 500], [50, 0]])
    expect(statistics.batches[1].starts_at).toBe(iso(resumedAt))
    expect(sendsTo("resume", before)).toHaveLength(750)
    await ok("POST", `/campaigns/${created.id}/pause`)
  }, SLOW)

  it("walks a ramp of 3,000 over days in New York: 250, 500, then the limit; paused, resumed, throttled at the limit, completed", async () => {
    // Start at 10:00 in New York, sending each following day's batch at 09:00 there.
    const now = await clock()
    const todayAt10 = localAt(now, 0, 10, 0, NEW_YORK)
    const t0 = todayAt10 > now ? todayAt10 : localAt(now, 1, 10, 0, NEW_YORK)
    await advanceTo(t0)
    const at9 = (days: number) => localAt(t0, days, 9, 0, NEW_YORK)
    const at = (days: number, hh: number, mm: number) => localAt(t0, days, hh, mm, NEW_YORK)

    const log: Array<{ at: number; n: number }> = []
    const first = mark()
    let counted = 0
    /** Moves to `ms`, runs what is due, and returns how many the operator received then. */
    const step = async (ms: number) => {
      await advanceTo(ms)
      const n = sendsTo("ramp", first).length - counted
      counted += n
      log.push({ at: ms, n })
      return n
    }

    const created = await create("ramp", { list_ids: [lists.ramp] }, {
      name: "Ramp walk",
      timezone: NEW_YORK,
      split_sending: { mode: "ramp", send_time: "09:00" }
    })
    const check = await ok("GET", `/campaigns/${created.id}/warmup-check`)
    expect(check.channels[0]).toMatchObject({
      warming_up: true,
      reasons: ["connected_recently", "few_completed_campaigns", "few_campaign_messages", "audience_above_limit"],
      messaging_limit: LIMIT,
      audience: 3000,
      first_batch: 250,
      requires_acknowledgement: false
    })
    expect(check.requires_acknowledgement).toBe(false)
    await ok("POST", `/campaigns/${created.id}/send`, {})

    // Day 0: 250 at once; day 1 at 09:00 the next morning.
    expect(await step(t0)).toBe(250)
    const planned = await stats(created.id)
    expect(planned).toMatchObject({
      status: "sending",
      throttle_reason: "daily_batch_limit",
      audience_size: 3000,
      recipients: { pending: 2750, sending: 0, sent: 250, failed: 0, skipped: 0 }
    })
    expect(planned.batches).toEqual([
      { channel_id: channel.ramp, day: 0, planned_size: 250, starts_at: iso(t0), sent: 250 },
      { channel_id: channel.ramp, day: 1, planned_size: 500, starts_at: iso(at9(1)), sent: 0 },
      { channel_id: channel.ramp, day: 2, planned_size: 1000, starts_at: iso(at9(2)), sent: 0 },
      { channel_id: channel.ramp, day: 3, planned_size: 1000, starts_at: iso(at9(3)), sent: 0 },
      { channel_id: channel.ramp, day: 4, planned_size: 250, starts_at: iso(at9(4)), sent: 0 }
    ])
    for (const batch of planned.batches.slice(1)) {
      expect(wallOf(Date.parse(batch.starts_at), NEW_YORK)).toMatchObject({ hh: 9, mm: 0 })
    }
    expect(await campaign(created.id)).toMatchObject({ status: "sending", throttle_reason: "daily_batch_limit", next_batch_at: iso(at9(1)) })
    expect(await step(at9(1) - 1000)).toBe(0)

    // Day 1: 500.
    expect(await step(at9(1))).toBe(500)
    expect(await campaign(created.id)).toMatchObject({ throttle_reason: "daily_batch_limit", next_batch_at: iso(at9(2)) })
    expect((await stats(created.id)).batches[1]).toMatchObject({ day: 1, planned_size: 500, sent: 500 })

    // Paused: nothing goes out, whatever the days.
    expect(await ok("POST", `/campaigns/${created.id}/pause`)).toMatchObject({ status: "paused", throttle_reason: null, next_batch_at: null })
    expect(await step(at9(2))).toBe(0)
    expect(await step(at9(4))).toBe(0)
    expect(await step(at(4, 15, 0))).toBe(0)
    expect(await stats(created.id)).toMatchObject({ status: "paused", recipients: { pending: 2250, sent: 750 } })

    // Resumed at 15:00: the next day's size (1000, the limit) from now, then 09:00 each day.
    const resumedAt = at(4, 15, 0)
    expect(await ok("POST", `/campaigns/${created.id}/resume`, {})).toMatchObject({ status: "sending", paused_at: null })
    expect(await step(resumedAt)).toBe(1000)
    const resumed = await stats(created.id)
    const ahead = resumed.batches.filter((b: any) => Date.parse(b.starts_at) >= resumedAt)
    expect(ahead.map((b: any) => [b.planned_size, b.starts_at, b.sent])).toEqual([
      [1000, iso(resumedAt), 1000],
      [1000, iso(at9(5)), 0],
      [250, iso(at9(6)), 0]
    ])
    expect(await campaign(created.id)).toMatchObject({ throttle_reason: "daily_batch_limit", next_batch_at: iso(at9(5)) })

    // 09:00 the next day: the 1000 handed at 15:00 are still within 24 hours, so the limit holds
    // the batch: pending, never failed, looked at again.
    expect(await step(at9(5))).toBe(0)
    const limited = await campaign(created.id)
    expect(limited).toMatchObject({ status: "sending", throttle_reason: "chatapp_messaging_limit" })
    expect(Date.parse(limited.next_batch_at)).toBeGreaterThan(at9(5))
    expect(await stats(created.id)).toMatchObject({ recipients: { pending: 1250, sending: 0, sent: 1750, failed: 0 } })
    expect(await step(at(5, 14, 59))).toBe(0)
    expect(await campaign(created.id)).toMatchObject({ throttle_reason: "chatapp_messaging_limit" })
    // Once they left the window, the day's batch goes.
    expect(await step(at(5, 15, 1))).toBe(1000)
    expect(await campaign(created.id)).toMatchObject({ throttle_reason: "daily_batch_limit", next_batch_at: iso(at9(6)) })

    // The last 250: held at 09:00 by the limit again, out after 15:01.
    expect(await step(at9(6))).toBe(0)
    expect(await campaign(created.id)).toMatchObject({ throttle_reason: "chatapp_messaging_limit" })
    expect(await step(at(6, 15, 2))).toBe(250)
    const done = await stats(created.id)
    expect(done).toMatchObject({
      status: "completed",
      throttle_reason: null,
      audience_size: 3000,
      recipients: { pending: 0, sending: 0, sent: 3000, delivered: 0, read: 0, failed: 0, skipped: 0 },
      skipped_by_reason: {}
    })
    expect(done.batches.reduce((sum: number, b: any) => sum + b.sent, 0)).toBe(3000)
    const finished = await campaign(created.id)
    expect(finished).toMatchObject({ status: "completed", next_batch_at: null, completed_at: iso(at(6, 15, 2)) })

    // Nobody twice, nobody missing, and never more than the limit within any 24 hours.
    const to = sendsTo("ramp", first)
    expect(to).toHaveLength(3000)
    expect(new Set(to)).toEqual(new Set(range(0, 3000).map((n) => digits(phoneOf(n)))))
    for (const { at: end } of log) {
      const inWindow = log.filter((e) => e.at <= end && e.at >= end - DAY).reduce((sum, e) => sum + e.n, 0)
      expect(inWindow, `handed within the 24 hours before ${iso(end)}`).toBeLessThanOrEqual(LIMIT)
    }
    // Later days change nothing.
    expect(await step(at9(9))).toBe(0)
  }, SLOW)
})

// ---------------------------------------------------------------------------------------------
// 4. A host killed while sends are in flight

describe.each(hostBackends)("a campaign across a host killed mid-batch ($name)", (backend) => {
  const PHONE_NUMBER_ID = "106540352291001"
  const AUDIENCE = 300
  /** The numbers' pace: the audience takes over a second, so the pause and the kill land mid-send. */
  const PER_SECOND = 250
  let h: ChatappHost

  beforeAll(async () => {
    // A slow operator: each send is answered after 100 ms, so several are in flight at any time.
    h = await startChatappHost(backend, { accessToken: TOKEN, appSecret: APP_SECRET, graph: { messageDelayMs: 100 } })
  }, 120_000)
  afterAll(() => h?.close())

  // Issue 28's first race, from outside: a pause landing while a round is sending. The round used to
  // hand its whole page to the operator and end with a whole-row save of the campaign it had read;
  // now it hands nobody over once paused and its end writes only while the campaign is `sending`.
  // Runs before the kill below, on a number of its own, while this describe's host is alive.
  /** Who the operator was asked to send to through number `numberId`, answered or not, in order. */
  const sendsTo = (numberId: string) =>
    h.graph.requests().filter((r) => r.method === "POST" && r.path === `/${numberId}/messages`).map((r) => String((r.json as any).to))
  /** A campaign of `audience` new contacts on a new number of its own, ready to send. */
  const campaignOnNewNumber = async (numberId: string, name: string, audience: number, phonePrefix: string) => {
    const ok = async (method: string, path: string, body?: unknown, status = 200) => {
      const answer = await h.api(method, path, body)
      expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status)
      return answer.body
    }
    const channel_id = await connectChannel(h, h.tenant, "chatapp", { phone_number_id: numberId, business_account_id: WABA_ID })
    await admin(h.env, "channel", "set-throughput", "--tenant", h.tenant.id, "--channel", channel_id, "--per-second", String(PER_SECOND))
    const adopted = await ok("POST", "/chatapp-templates/library/adopt", { channel_id, library_template_name: "verification_code_1" }, 201)
    const list = await ok("POST", "/lists", { name }, 201)
    const contacts = range(0, audience).map((n) => ({ name: `${name} ${n}`, phone: `${phonePrefix}${String(n).padStart(5, "0")}` }))
    await ok("POST", "/contacts/import", { contacts, list_ids: [list.id], optin_confirmed: true })
    const { id } = await ok("POST", "/campaigns", {
      name,
      channel_ids: [channel_id],
      template_id: adopted.id,
      variable_values: ["482913"],
      audience: { list_ids: [list.id] }
    }, 201)
    return { ok, id, contacts, received: () => sendsTo(numberId) }
  }

  it("a pause landing while a round is sending stands: nobody more is handed over, nobody is lost, and resumed the rest goes out once each", async () => {
    const PAUSED_NUMBER_ID = "106540352291002"
    const PAUSED_AUDIENCE = 400
    const { ok, id, contacts, received } = await campaignOnNewNumber(PAUSED_NUMBER_ID, "Paused mid-round", PAUSED_AUDIENCE, "+4917300")
    const stats = () => ok("GET", `/campaigns/${id}/statistics`)

    // The host's own worker sends; the pause lands once the operator has the round's first sends.
    await ok("POST", `/campaigns/${id}/send`, { warmup_acknowledged: true })
    await waitUntil("the operator received the round's first sends", () => received().length > 0, 30_000)
    const paused = await ok("POST", `/campaigns/${id}/pause`)
    const atPause = received().length
    expect(paused).toMatchObject({ status: "paused", throttle_reason: null, next_batch_at: null })

    // The round in flight settles: only what it had handed over before the pause still reaches the
    // operator (at most the engine's window of sends in flight), not the rest of its page.
    await waitUntil("the round in flight settled", async () => (await stats()).recipients.sending === 0, 30_000)
    const settled = received().length
    expect(settled - atPause, `received ${atPause} when the pause answered, ${settled} once the round settled`)
      .toBeLessThanOrEqual(DEFAULT_CAMPAIGN_ENGINE.concurrency)
    expect(settled).toBeLessThan(PAUSED_AUDIENCE)
    // No later round sends: a minute passes (past every back-off a round sets) and all background
    // work runs, and the count stands. Not more: the kill below starts a second host, whose clock
    // starts at the real time, and relies on this host's clock being close to it.
    await h.advance(61)
    await h.drain()
    expect(received()).toHaveLength(settled)
    expect(await ok("GET", `/campaigns/${id}`)).toMatchObject({ status: "paused", paused_at: paused.paused_at, next_batch_at: null })
    // Nobody lost: everyone the operator received is sent, everyone else still pending.
    expect(await stats()).toMatchObject({
      status: "paused",
      audience_size: PAUSED_AUDIENCE,
      recipients: { pending: PAUSED_AUDIENCE - settled, sending: 0, sent: settled, failed: 0, skipped: 0 }
    })
    expect(new Set(received()).size).toBe(settled)

    // Resumed, the rest goes out: every number exactly once.
    expect(await ok("POST", `/campaigns/${id}/resume`)).toMatchObject({ status: "sending", paused_at: null })
    await h.drain()
    expect(await stats()).toMatchObject({
      status: "completed",
      recipients: { pending: 0, sending: 0, sent: PAUSED_AUDIENCE, failed: 0, skipped: 0 }
    })
    const to = received()
    expect(to).toHaveLength(PAUSED_AUDIENCE)
    expect(new Set(to)).toEqual(new Set(contacts.map((c) => digits(c.phone))))
  }, SLOW)

  // A pause landing while a round starts: the engine has claimed the campaign and is reading the
  // number's limit from the operator (held here) before it reads the audience and plans.
  it("a pause landing while a round starts stands: nobody is sent, and resumed everyone goes out once", async () => {
    const NUMBER_ID = "106540352291003"
    const AUDIENCE = 300
    const { ok, id, contacts, received } = await campaignOnNewNumber(NUMBER_ID, "Paused at start", AUDIENCE, "+4917400")
    const limitReads = () => h.graph.requests().filter((r) => r.method === "GET" && r.path === `/${NUMBER_ID}`).length
    // Scheduled a minute ahead, so the engine starts it only when the test moves the clock.
    const now = Date.parse((await http(h.host.url, "GET", "/_test/clock")).body.now)
    await ok("POST", `/campaigns/${id}/schedule`, { send_at: new Date(now + 60_000).toISOString(), warmup_acknowledged: true })
    // The operator holds its answer to the round's limit read until the pause has landed.
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    h.graph.script("GET", `/${NUMBER_ID}`, {
      json: {
        id: NUMBER_ID,
        display_phone_number: "+1 555-000-1003",
        verified_name: "Fake Business",
        messaging_limit_tier: "TIER_1K",
        quality_rating: "GREEN",
        status: "CONNECTED",
        throughput: { level: "STANDARD" }
      },
      after: held
    })
    const before = limitReads()
    const advancing = h.advance(61)
    try {
      await waitUntil("the round's start asked the operator for the number's limit", () => limitReads() > before, 30_000)
      expect(await ok("POST", `/campaigns/${id}/pause`)).toMatchObject({ status: "paused", next_batch_at: null })
    } finally {
      release()
    }
    await advancing
    await h.drain()
    expect(await ok("GET", `/campaigns/${id}`)).toMatchObject({ status: "paused", next_batch_at: null })
    expect(received()).toEqual([])
    // Resumed, everyone goes out once.
    await ok("POST", `/campaigns/${id}/resume`)
    await h.drain()
    expect(await ok("GET", `/campaigns/${id}/statistics`)).toMatchObject({
      status: "completed",
      recipients: { pending: 0, sending: 0, sent: AUDIENCE, failed: 0, skipped: 0 }
    })
    expect(new Set(received())).toEqual(new Set(contacts.map((c) => digits(c.phone))))
    expect(received()).toHaveLength(AUDIENCE)
  }, SLOW)

  // The operator took a send but its answer never came back (the connection dropped after the request
  // left): the send is in doubt, not refused, so it is never sent again; the operator's status settles it.
  it("a send whose answer is lost stays in doubt, is never sent again, and is settled by the operator's status", async () => {
    const NUMBER_ID = "106540352291005"
    const AUDIENCE = 5
    const { ok, id, contacts, received } = await campaignOnNewNumber(NUMBER_ID, "Answer lost", AUDIENCE, "+4917600")
    const lost = contacts[2]!
    h.graph.scriptRecipient(lost.phone, { drop: true })
    const stats = () => ok("GET", `/campaigns/${id}/statistics`)

    await ok("POST", `/campaigns/${id}/send`, { warmup_acknowledged: true })
    await h.drain()
    // The round backs off once the answer is lost: sends not yet made wait for the next round.
    expect(await stats()).toMatchObject({ status: "sending", recipients: { sending: 1, failed: 0 } })
    // Past the back-off, the next round sends the rest, finds the lost one in doubt and sends it no second time.
    await h.advance(31)
    await h.drain()
    expect(await stats()).toMatchObject({ status: "sending", recipients: { pending: 0, sending: 1, sent: AUDIENCE - 1, failed: 0 } })
    expect(received().filter((to) => to === digits(lost.phone))).toHaveLength(1)

    // The operator's status names the send: the recipient is sent, and the campaign completes.
    const accepted = h.graph.sends().filter((sent) => sent.phoneNumberId === NUMBER_ID && sent.to === digits(lost.phone))
    expect(accepted).toHaveLength(1)
    expect((await h.post(statusesPayload(WABA_ID, accepted, "delivered", 1764150000))).status).toBe(200)
    await h.drain()
    await h.advance(11)
    await h.drain()
    expect(await stats()).toMatchObject({ status: "completed", recipients: { pending: 0, sending: 0, sent: AUDIENCE - 1, delivered: 1, failed: 0 } })
    expect(received()).toHaveLength(AUDIENCE)
    expect(new Set(received())).toEqual(new Set(contacts.map((c) => digits(c.phone))))
  }, SLOW)

  // Issue 28's crash requirement: the only sending host SIGKILLed in the middle of a 10,000-recipient
  // campaign on PostgreSQL (2,000 on SQLite, to keep the suite short), and another started.
  it("a host killed mid-campaign: another resumes once the lease lapses, nobody reaches the operator twice, sends in flight are settled by the operator's statuses, and the statistics agree with the operator", async () => {
    const audience = backend.name === "PostgreSQL" ? 10_000 : 2_000
    const LEASE_SECONDS = 120 // the host's default OMNI_LEASE_SECONDS
    const api = (method: string, path: string, body?: unknown, on?: HostProcess) => h.api(method, path, body, h.tenant, on)
    const channel_id = await connectChannel(h, h.tenant, "chatapp", { phone_number_id: PHONE_NUMBER_ID, business_account_id: WABA_ID })
    // An upgraded number: 1,000 messages a second, to 100,000 people a day.
    h.graph.number(PHONE_NUMBER_ID, { messaging_limit_tier: "TIER_100K" })
    await admin(h.env, "channel", "set-throughput", "--tenant", h.tenant.id, "--channel", channel_id, "--per-second", "1000")
    const adopted = await api("POST", "/chatapp-templates/library/adopt", { channel_id, library_template_name: "verification_code_1" })
    expect(adopted.status).toBe(201)
    const list = await api("POST", "/lists", { name: "Everyone" })
    const contacts = range(0, audience).map((n) => ({ name: `K${n}`, phone: `+4917200${String(n).padStart(5, "0")}` }))
    for (let from = 0; from < audience; from += 2_000) {
      const imported = await api("POST", "/contacts/import", { contacts: contacts.slice(from, from + 2_000), list_ids: [list.body.id], optin_confirmed: true })
      expect(imported.status).toBe(200)
    }
    const created = await api("POST", "/campaigns", {
      name: "Interrupted",
      channel_ids: [channel_id],
      template_id: adopted.body.id,
      variable_values: ["482913"],
      audience: { list_ids: [list.body.id] }
    })
    expect(created.status).toBe(201)
    const id = created.body.id
    const sends = () => h.graph.sends().filter((sent) => sent.phoneNumberId === PHONE_NUMBER_ID)
    const clockOf = async (on: HostProcess) => Date.parse((await http(on.url, "GET", "/_test/clock")).body.now)

    // The host's own worker sends; it is killed with about a third of the audience handed over. The
    // five sends that follow the first 30 % never reach the operator: their requests hang unanswered,
    // so the operator has no message of theirs and will report none (requests lost on their way).
    // They go out together, so the other hand-over groups go on around theirs.
    const unanswered = () => {
      const answered = new Set(sends().map((sent) => sent.to))
      return sendsTo(PHONE_NUMBER_ID).filter((phone) => !answered.has(phone))
    }
    expect((await api("POST", `/campaigns/${id}/send`, { warmup_acknowledged: true })).status).toBe(200)
    await waitUntil("the operator received the first sends", () => sends().length >= audience * 0.3, 60_000)
    h.graph.script("POST", `/${PHONE_NUMBER_ID}/messages`, ...range(0, 5).map(() => ({ hang: true })))
    await waitUntil("the operator received a third of the audience and the lost requests", () => sends().length >= audience / 3 && unanswered().length === 5, 60_000)
    const lost = unanswered()
    const killedAt = await clockOf(h.host)
    await h.host.kill()
    const atKill = sends().length
    expect(atKill).toBeLessThan(audience)

    // A new process on the same database takes the campaign over once the dead one's lease lapses
    // (its clock starts at the real time, behind the dead host's, which earlier cases moved on).
    const next = await h.another()
    const behind = Math.max(0, Math.ceil((killedAt - (await clockOf(next))) / 1000))
    await h.advance(behind + LEASE_SECONDS + 1, next)
    await h.drain(next)
    const statistics = async () => (await api("GET", `/campaigns/${id}/statistics`, undefined, next)).body
    // Everyone pending went out; the sends in flight at the kill wait for the operator's word.
    const afterTakeover = await statistics()
    expect(afterTakeover, JSON.stringify(afterTakeover)).toMatchObject({ status: "sending", recipients: { pending: 0 } })
    const inDoubt = afterTakeover.recipients.sending
    expect(inDoubt).toBeGreaterThan(0)
    expect(inDoubt).toBeLessThanOrEqual(DEFAULT_CAMPAIGN_ENGINE.concurrency)

    // At most once: no number received twice.
    const to = sends().map((sent) => sent.to)
    expect(new Set(to).size).toBe(to.length)
    const reached = new Set(to)
    const never = contacts.map((c) => digits(c.phone)).filter((phone) => !reached.has(phone))
    expect(never.length, `in doubt: ${inDoubt}`).toBeLessThanOrEqual(inDoubt)
    expect(never).toEqual(expect.arrayContaining(lost))

    // The operator reports every message it accepted, the sends in flight at the kill among them, each
    // status echoing its send's callback data; the engine's next look settles those it names.
    const accepted = sends()
    const at = Math.floor(killedAt / 1000)
    for (let from = 0; from < accepted.length; from += 250) {
      const posted = await h.post(statusesPayload(WABA_ID, accepted.slice(from, from + 250), "sent", at), { on: next })
      expect(posted.status).toBe(200)
    }
    await h.drain(next)
    await h.advance(11, next)
    await h.drain(next)
    const settled = await statistics()
    expect(settled, JSON.stringify(settled)).toMatchObject({
      status: "sending",
      recipients: { pending: 0, sending: never.length, sent: accepted.length, failed: 0 }
    })

    // A send that never reached the operator has no status to come: it fails once the wait for one
    // is over, and is never sent again.
    await h.advance(DEFAULT_CAMPAIGN_ENGINE.inDoubtSeconds + 1, next)
    await h.drain(next)
    const final = await statistics()
    expect(final, JSON.stringify(final)).toMatchObject({
      status: "completed",
      audience_size: audience,
      recipients: { pending: 0, sending: 0, sent: accepted.length, failed: never.length, skipped: 0 }
    })
    expect(final.batches.reduce((sum: number, b: any) => sum + b.sent, 0)).toBe(accepted.length)
    expect(sends()).toHaveLength(accepted.length)
  }, 240_000)
})
