import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  decideAnswer,
  effectiveStatus,
  inputTypesOf,
  MASK,
  maskAnswers,
  readFlowReply,
  type SessionDecision,
  type SessionEvent,
  sensitiveInputs
} from "../../../src/flows/FlowSession.ts"
import { planWriteback, type WritebackResult } from "../../../src/flows/Writeback.ts"
import type { ContactRecord } from "../../../src/ports/ContactStore.ts"
import type { FlowScreen } from "../../../src/ports/FlowStore.ts"

/** The operator's inbound message carrying a flow's answer. */
const nfmReply = (responseJson: unknown): Record<string, unknown> => ({
  from: "14155550100",
  id: "wamid.answer",
  timestamp: "1767261600",
  type: "interactive",
  interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: responseJson } }
})
const answerMessage = (flowToken: string, answers: Readonly<Record<string, unknown>>) =>
  nfmReply(JSON.stringify({ flow_token: flowToken, ...answers }))

const SCREENS: ReadonlyArray<FlowScreen> = [
  {
    id: "DETAILS",
    inputs: [{ name: "full_name", type: "TextInput" }, { name: "pin", type: "TextInput" }],
    sensitive_fields: ["pin"]
  },
  {
    id: "CONSENT",
    inputs: [{ name: "marketing", type: "OptIn" }, { name: "id_photo", type: "PhotoPicker" }],
    sensitive_fields: ["id_photo"]
  }
]

describe("readFlowReply", () => {
  it("reads the flow token and the other keys as answers, with the platform's value types", () => {
    const reply = readFlowReply(answerMessage("tok-1", {
      full_name: "Ada",
      marketing: true,
      interests: ["opt_1", "opt_2"],
      birthday: "1990-12-10"
    }))
    expect(reply).toEqual({
      flowToken: "tok-1",
      answers: { full_name: "Ada", marketing: true, interests: ["opt_1", "opt_2"], birthday: "1990-12-10" }
    })
  })

  it("a response with nothing but the token has no answers", () => {
    expect(readFlowReply(answerMessage("tok-1", {}))).toEqual({ flowToken: "tok-1", answers: {} })
  })

  it("keeps an input named like an Object property as an answer of its own", () => {
    const reply = readFlowReply(nfmReply('{"flow_token":"tok-1","__proto__":"x","constructor":"y"}'))
    expect(reply?.answers).toEqual(JSON.parse('{"__proto__":"x","constructor":"y"}'))
    expect(Object.getPrototypeOf(reply?.answers)).toBe(Object.prototype)
    expect(Object.hasOwn(reply!.answers, "__proto__")).toBe(true)
  })

  it.each<[string, Record<string, unknown>]>([
    ["a text message", { type: "text", text: { body: "hello" } }],
    ["a button reply", { type: "interactive", interactive: { type: "button_reply", button_reply: { id: "b", title: "Yes" } } }],
    ["an interactive message without its object", { type: "interactive" }],
    ["an nfm_reply without its object", { type: "interactive", interactive: { type: "nfm_reply" } }],
    ["unparsable JSON", nfmReply("{flow_token: tok}")],
    ["response_json not a string", nfmReply({ flow_token: "tok-1" })],
    ["JSON that is an array", nfmReply('["tok-1"]')],
    ["JSON that is null", nfmReply("null")],
    ["JSON that is a string", nfmReply('"tok-1"')],
    ["no flow_token", nfmReply('{"full_name":"Ada"}')],
    ["a flow_token that is not a string", nfmReply('{"flow_token":42}')],
    ["an empty flow_token", nfmReply('{"flow_token":""}')]
  ])("%s: null", (_, message) => {
    expect(readFlowReply(message)).toBeNull()
  })
})

describe("maskAnswers", () => {
  it("masks the inputs on any screen's sensitive list, media included, and keeps the rest", () => {
    const answers = {
      full_name: "Ada",
      pin: "1234",
      marketing: false,
      id_photo: [{ id: "media-1", mime_type: "image/jpeg", file_name: "id.jpg" }],
      not_on_any_screen: "kept"
    }
    expect(maskAnswers(answers, SCREENS)).toEqual({
      full_name: "Ada",
      pin: MASK,
      marketing: false,
      id_photo: MASK,
      not_on_any_screen: "kept"
    })
  })

  it("the mask is four bullets (U+2022)", () => {
    expect(MASK).toBe("••••")
    expect([...MASK].map((c) => c.codePointAt(0))).toEqual([0x2022, 0x2022, 0x2022, 0x2022])
  })

  it("adds no sensitive input that was not answered and leaves the answers as they were", () => {
    const answers = Object.freeze({ full_name: "Ada" })
    expect(maskAnswers(answers, SCREENS)).toEqual({ full_name: "Ada" })
    expect(answers).toEqual({ full_name: "Ada" })
  })

  it("masks whatever the value: strings, booleans, arrays, null", () => {
    const screens = [{ id: "S", inputs: [], sensitive_fields: ["a", "b", "c", "d"] }]
    expect(maskAnswers({ a: "", b: true, c: [], d: null }, screens)).toEqual({ a: MASK, b: MASK, c: MASK, d: MASK })
  })

  it("sensitiveInputs and inputTypesOf read every screen", () => {
    expect([...sensitiveInputs(SCREENS)].sort()).toEqual(["id_photo", "pin"])
    expect(Object.fromEntries(inputTypesOf(SCREENS))).toEqual({
      full_name: "TextInput",
      pin: "TextInput",
      marketing: "OptIn",
      id_photo: "PhotoPicker"
    })
  })
})

describe("decideAnswer", () => {
  it.each<[string, SessionDecision]>([
    ["sent", { kind: "complete" }],
    ["expired", { kind: "complete" }],
    ["completed", { kind: "ignore", reason: "already_completed" }],
    ["failed", { kind: "ignore", reason: "not_open" }],
    ["something_else", { kind: "ignore", reason: "not_open" }]
  ])("%s → %j", (status, decision) => {
    expect(decideAnswer(status)).toEqual(decision)
  })
})

const DAY = 24 * 60 * 60 * 1000
const EXPIRES_AT = "2026-03-02T10:00:00.000Z"

describe("effectiveStatus", () => {
  it.each<[string, string, string]>([
    ["sent", "2026-03-01T10:00:00.000Z", "sent"],
    ["sent", EXPIRES_AT, "sent"],
    ["sent", "2026-03-02T10:00:00.001Z", "expired"],
    ["sent", "2027-01-01T00:00:00.000Z", "expired"],
    ["completed", "2027-01-01T00:00:00.000Z", "completed"],
    ["completed", "2026-03-01T10:00:00.000Z", "completed"],
    ["failed", "2027-01-01T00:00:00.000Z", "failed"]
  ])("%s read at %s: %s", (status, now, effective) => {
    expect(effectiveStatus({ status, expires_at: EXPIRES_AT }, now)).toBe(effective)
  })

  it("an answer after expiry completes all the same: expiry never changes what an answer does", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("sent", "completed", "failed", "expired"),
        fc.integer({ min: -2 * DAY, max: 2 * DAY }),
        (status, offset) => {
          const now = new Date(Date.parse(EXPIRES_AT) + offset).toISOString()
          expect(decideAnswer(effectiveStatus({ status, expires_at: EXPIRES_AT }, now)).kind).toBe(decideAnswer(status).kind)
        }
      ),
      { numRuns: 500 }
    )
  })
})

// ---------------------------------------------------------------------------------------------
// The model test: a few sessions sent at SENT_AT, answers (first ones, redeliveries, answers whose
// token matches no session) and reads arriving at any time before or after expiry. The system is
// the inbound path as the service runs it on these functions; the model only remembers which
// tokens were answered first, when and with what.

const SENT_AT = Date.parse("2026-03-01T10:00:00.000Z")
const iso = (ms: number) => new Date(ms).toISOString()
const KNOWN_TOKENS = ["tok-a", "tok-b", "tok-c"]
const UNKNOWN_TOKENS = ["tok-foreign-1", "tok-foreign-2"]
const CONTACT: ContactRecord = {
  id: "contact-1",
  tenant_id: "tenant-1",
  name: "Old name",
  phone: "+14155550100",
  email: null,
  language: null,
  custom_fields: {},
  created_at: iso(SENT_AT - DAY),
  updated_at: null
}

interface StoredSession {
  readonly id: string
  readonly sender_type: "api" | "adopted"
  readonly contact_id: string | null
  readonly status: string
  readonly expires_at: string
  readonly answers: Readonly<Record<string, unknown>> | null
  readonly writeback_result: WritebackResult | null
  readonly completed_at: string | null
}

interface System {
  readonly sessions: Map<string, StoredSession>
  readonly emitted: Array<{ readonly event_id: string; readonly answers: Readonly<Record<string, unknown>> }>
  readonly writebacksRun: Map<string, number>
}

const newSystem = (): System => ({
  sessions: new Map(KNOWN_TOKENS.map((token, i) => [token, {
    id: `session-${i}`,
    sender_type: "api",
    contact_id: CONTACT.id,
    status: "sent",
    expires_at: iso(SENT_AT + DAY),
    answers: null,
    writeback_result: null,
    completed_at: null
  }])),
  emitted: [],
  writebacksRun: new Map()
})

/** The inbound path: read the message, match the token, decide, store, write back, emit. */
const receive = (system: System, message: Readonly<Record<string, unknown>>, event: SessionEvent, effective: boolean) => {
  const reply = readFlowReply(message)
  if (reply === null) return
  const found = system.sessions.get(reply.flowToken)
  const session: StoredSession = found ?? {
    id: `adopted-${reply.flowToken}`,
    sender_type: "adopted",
    contact_id: null,
    status: "sent",
    expires_at: event.at,
    answers: null,
    writeback_result: null,
    completed_at: null
  }
  const decision = decideAnswer(effective ? effectiveStatus(session, event.at) : session.status)
  if (decision.kind !== "complete") return
  const plan = planWriteback({
    contact: session.contact_id === null ? null : CONTACT,
    mappings: session.sender_type === "adopted" ? [] : [{ input: "full_name", target: "contact_field", field: "name" }],
    answers: reply.answers,
    sensitive: sensitiveInputs(SCREENS),
    inputTypes: inputTypesOf(SCREENS),
    customFields: new Map(),
    tags: new Set(),
    lists: new Map(),
    emailOwner: () => null,
    phoneOwner: () => null
  })
  system.writebacksRun.set(session.id, (system.writebacksRun.get(session.id) ?? 0) + 1)
  const answers = maskAnswers(reply.answers, SCREENS)
  system.sessions.set(reply.flowToken, {
    ...session,
    status: "completed",
    answers,
    writeback_result: plan.result,
    completed_at: event.at
  })
  system.emitted.push({ event_id: session.id, answers })
}

interface Model {
  readonly firstAnswers: Map<string, { readonly at: string; readonly answers: Readonly<Record<string, unknown>> }>
}

type Answers = Readonly<Record<string, unknown>>

class AnswerCommand implements fc.Command<Model, System> {
  constructor(
    readonly token: string,
    readonly at: string,
    readonly answers: Answers,
    readonly viaEffectiveStatus: boolean
  ) {}
  check = () => true
  run(model: Model, system: System) {
    receive(system, answerMessage(this.token, this.answers), { kind: "answer", at: this.at }, this.viaEffectiveStatus)
    if (!model.firstAnswers.has(this.token)) model.firstAnswers.set(this.token, { at: this.at, answers: this.answers })

    // Each token answered completes one session, once: one event each, with the session's id.
    expect(system.emitted.length).toBe(model.firstAnswers.size)
    expect(new Set(system.emitted.map((event) => event.event_id)).size).toBe(system.emitted.length)
    for (const count of system.writebacksRun.values()) expect(count).toBe(1)

    const first = model.firstAnswers.get(this.token)!
    const session = system.sessions.get(this.token)!
    expect(session.status).toBe("completed")
    // The first answer stays, masked; a redelivery changes nothing, even past expiry.
    expect(session.completed_at).toBe(first.at)
    expect(session.answers).toEqual(maskAnswers(first.answers, SCREENS))
    if ("pin" in first.answers) expect(session.answers?.pin).toBe(MASK)
    if (KNOWN_TOKENS.includes(this.token)) {
      expect(session.sender_type).toBe("api")
      expect(session.writeback_result?.state).not.toBe("skipped")
    } else {
      expect(session.sender_type).toBe("adopted")
      expect(session.contact_id).toBeNull()
      expect(session.writeback_result?.state).toBe("skipped")
    }
  }
  toString = () => `answer(${this.token} at ${this.at}, ${JSON.stringify(this.answers)}, ${this.viaEffectiveStatus ? "effective" : "stored"})`
}

class ReadCommand implements fc.Command<Model, System> {
  constructor(readonly token: string, readonly at: string) {}
  check = () => true
  run(model: Model, system: System) {
    const session = system.sessions.get(this.token)!
    const expected = model.firstAnswers.has(this.token)
      ? "completed"
      : Date.parse(this.at) > SENT_AT + DAY
      ? "expired"
      : "sent"
    expect(effectiveStatus(session, this.at)).toBe(expected)
    // Reading changes nothing.
    expect(system.sessions.get(this.token)).toBe(session)
  }
  toString = () => `read(${this.token} at ${this.at})`
}

class OtherMessageCommand implements fc.Command<Model, System> {
  constructor(readonly message: Readonly<Record<string, unknown>>) {}
  check = () => true
  run(model: Model, system: System) {
    const before = [...system.sessions.entries()]
    receive(system, this.message, { kind: "answer", at: iso(SENT_AT) }, true)
    expect([...system.sessions.entries()]).toEqual(before)
    expect(system.emitted.length).toBe(model.firstAnswers.size)
  }
  toString = () => `other(${JSON.stringify(this.message)})`
}

const atArb = fc
  .oneof(
    fc.constantFrom(0, DAY - 1, DAY, DAY + 1, 2 * DAY),
    fc.integer({ min: 0, max: 3 * DAY })
  )
  .map((offset) => iso(SENT_AT + offset))
const answersArb: fc.Arbitrary<Answers> = fc.record(
  {
    full_name: fc.constantFrom("Ada", "Grace Hopper", ""),
    pin: fc.constantFrom("1234", "0000"),
    marketing: fc.boolean(),
    interests: fc.array(fc.constantFrom("opt_1", "opt_2", "opt_3"), { maxLength: 3 }),
    id_photo: fc.constant([{ id: "media-1", mime_type: "image/jpeg", file_name: "id.jpg" }])
  },
  { requiredKeys: [] }
)
const commandsArb = fc.commands<Model, System>([
  fc.tuple(fc.constantFrom(...KNOWN_TOKENS, ...UNKNOWN_TOKENS), atArb, answersArb, fc.boolean())
    .map(([token, at, answers, effective]) => new AnswerCommand(token, at, answers, effective)),
  fc.tuple(fc.constantFrom(...KNOWN_TOKENS), atArb).map(([token, at]) => new ReadCommand(token, at)),
  fc.constantFrom<Readonly<Record<string, unknown>>>(
    { type: "text", text: { body: "tok-a" } },
    nfmReply("not json"),
    nfmReply('{"full_name":"no token"}')
  ).map((message) => new OtherMessageCommand(message))
], { maxCommands: 30 })

describe("the session machine against a model", () => {
  it("first answer completes (also after expiry), redeliveries and other messages change nothing, unknown tokens adopt, reads follow expiry", () => {
    fc.assert(
      fc.property(commandsArb, (commands) => {
        fc.modelRun(() => ({ model: { firstAnswers: new Map() }, real: newSystem() }), commands)
      }),
      { numRuns: 1000 }
    )
  })
})
