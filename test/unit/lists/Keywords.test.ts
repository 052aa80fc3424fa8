import fc from "fast-check"
import { describe, expect, it } from "vitest"
import {
  decideKeyword,
  defaultWelcomeMessage,
  type KeywordOutcome,
  type KeywordState,
  normalizeKeywordText,
  OPT_OUT_WORDS,
  parseKeyword
} from "../../../src/lists/Keywords.ts"

const PROMO = { id: "list-promo", slug: "promo", is_default: false }
const NEWS = { id: "list-news", slug: "news", is_default: true }
const VIP = { id: "list-vip", slug: "vip-club", is_default: false }

const state = (lists: KeywordState["lists"], subscribed: ReadonlyArray<string> = []): KeywordState => ({
  lists,
  subscribed: new Set(subscribed)
})
const WORKSPACE = [PROMO, NEWS, VIP]
const NOBODY = state(WORKSPACE)
const ON_ALL = state(WORKSPACE, [PROMO.id, NEWS.id, VIP.id])
const ON_PROMO = state(WORKSPACE, [PROMO.id])
const NO_DEFAULT = state([PROMO, VIP])

const PASS: KeywordOutcome = { kind: "pass" }
const subscribe = (listId: string): KeywordOutcome => ({ kind: "subscribe", listId })
const unsubscribe = (...listIds: Array<string>): KeywordOutcome => ({ kind: "unsubscribe", listIds })
const optOut = (...listIds: Array<string>): KeywordOutcome => ({ kind: "opt_out", listIds })

const ALL_OPT_OUTS = [
  "unsubscribe",
  "cancel",
  "stopp",
  "abmelden",
  "abbestellen",
  "arret",
  "arrêt",
  "baja",
  "cancelar",
  "sair",
  "annulla"
]

describe("normalizeKeywordText", () => {
  it.each([
    ["ARRÊT", "arret"],
    ["arre\u0302t", "arret"],
    ["ＳＴＯＰ", "stop"],
    ["Stop!!", "stop"],
    ["¡Baja!", "baja"],
    ["  STOP 🙏", "stop"],
    ["«arrêt»", "arret"],
    ["\u00a0stop\u00a0", "stop"],
    ["\u3000stop\u3000all\u3000", "stop all"],
    ["stop \t\n  PROMO", "stop promo"],
    ["👍🏽 start ❤️ 🇩🇪", "start"],
    ["🙏", ""],
    ["", ""]
  ])("%j → %j", (text, normal) => {
    expect(normalizeKeywordText(text)).toBe(normal)
  })

  it("keeps other scripts as they are, apart from case", () => {
    expect(normalizeKeywordText("СТОП")).toBe("стоп")
    expect(normalizeKeywordText("停止!")).toBe("停止")
  })
})

describe("parseKeyword", () => {
  it.each<[string, ReturnType<typeof parseKeyword>]>([
    ["start", { kind: "subscribe", slug: null }],
    ["subscribe", { kind: "subscribe", slug: null }],
    ["START promo", { kind: "subscribe", slug: "promo" }],
    ["subscribe Vip-Club", { kind: "subscribe", slug: "vip-club" }],
    ["stop", { kind: "unsubscribe", slug: null }],
    ["stop all", { kind: "unsubscribe", slug: null }],
    ["stop PROMO", { kind: "unsubscribe", slug: "promo" }],
    ["Arrêt", { kind: "opt_out" }],
    ["hello", null],
    ["stop the delivery please", null],
    ["stop стоп", null],
    ["unsubscribe promo", null]
  ])("%j", (text, command) => {
    expect(parseKeyword(text)).toEqual(command)
  })

  it("has the ten single-word opt-outs, normalised", () => {
    expect([...OPT_OUT_WORDS].sort()).toEqual(ALL_OPT_OUTS.filter((w) => w !== "arrêt").sort())
  })
})

describe("decideKeyword: the spec's table", () => {
  it("`start` or `subscribe`: subscribes to the default list", () => {
    expect(decideKeyword("start", NOBODY)).toEqual(subscribe(NEWS.id))
    expect(decideKeyword("Subscribe", NOBODY)).toEqual(subscribe(NEWS.id))
  })

  it("`start` or `subscribe` with no default list: passed on", () => {
    expect(decideKeyword("start", NO_DEFAULT)).toEqual(PASS)
    expect(decideKeyword("subscribe", NO_DEFAULT)).toEqual(PASS)
  })

  it("`start <slug>` and `subscribe <slug>`: subscribe to that list, the slug in any case", () => {
    expect(decideKeyword("START promo", NOBODY)).toEqual(subscribe(PROMO.id))
    expect(decideKeyword("subscribe VIP-club", NO_DEFAULT)).toEqual(subscribe(VIP.id))
  })

  it("subscribing again is consumed all the same (the welcome goes out again)", () => {
    expect(decideKeyword("start", ON_ALL)).toEqual(subscribe(NEWS.id))
    expect(decideKeyword("start promo", ON_PROMO)).toEqual(subscribe(PROMO.id))
  })

  it("`start <slug>` with an unknown slug: passed on", () => {
    expect(decideKeyword("start nosuch", NOBODY)).toEqual(PASS)
  })

  it("`stop`: leaves every list subscribed, in the workspace's order", () => {
    expect(decideKeyword("stop", ON_ALL)).toEqual(unsubscribe(PROMO.id, NEWS.id, VIP.id))
    expect(decideKeyword("stop", ON_PROMO)).toEqual(unsubscribe(PROMO.id))
  })

  it("`stop` from a contact subscribed to nothing: passed on", () => {
    expect(decideKeyword("stop", NOBODY)).toEqual(PASS)
    expect(decideKeyword("stop all", NOBODY)).toEqual(PASS)
  })

  it("`stop all`: leaves every list subscribed", () => {
    expect(decideKeyword("stop all", ON_ALL)).toEqual(unsubscribe(PROMO.id, NEWS.id, VIP.id))
    expect(decideKeyword("STOP ALL!", ON_PROMO)).toEqual(unsubscribe(PROMO.id))
  })

  it("`stop all` means every list even when a list is named `all`", () => {
    const ALL = { id: "list-all", slug: "all", is_default: false }
    expect(decideKeyword("stop all", state([PROMO, ALL], [PROMO.id, ALL.id]))).toEqual(unsubscribe(PROMO.id, ALL.id))
  })

  it("`stop <slug>`: leaves that list only", () => {
    expect(decideKeyword("stop PROMO", ON_ALL)).toEqual(unsubscribe(PROMO.id))
  })

  it("`stop <slug>` with an unknown slug or a list not subscribed: passed on", () => {
    expect(decideKeyword("stop nosuch", ON_ALL)).toEqual(PASS)
    expect(decideKeyword("stop news", ON_PROMO)).toEqual(PASS)
  })

  it.each(ALL_OPT_OUTS)("opt-out `%s`: leaves every list subscribed and opts out", (word) => {
    expect(decideKeyword(word, ON_ALL)).toEqual(optOut(PROMO.id, NEWS.id, VIP.id))
    expect(decideKeyword(word.toUpperCase(), ON_PROMO)).toEqual(optOut(PROMO.id))
  })

  it("an opt-out word is consumed even from a contact subscribed to nothing", () => {
    expect(decideKeyword("cancel", NOBODY)).toEqual(optOut())
  })
})

describe("decideKeyword: the rules", () => {
  it.each(["ARRÊT", "Arret", "arre\u0302t", "«arrêt»"])("the opt-out %j is accent- and case-insensitive", (text) => {
    expect(decideKeyword(text, ON_PROMO)).toEqual(optOut(PROMO.id))
  })

  it.each([
    "ＳＴＯＰ",
    "Stop!!",
    "stop 🙏",
    "  STOP 🙏",
    "\u00a0stop\u00a0",
    "\u3000stop\u3000",
    "\tStop.\n",
    "(stop)",
    "🛑 stop 🛑"
  ])("%j is `stop`: width, space, punctuation and emoji at the ends do not count", (text) => {
    expect(decideKeyword(text, ON_PROMO)).toEqual(unsubscribe(PROMO.id))
  })

  it("`¡Baja!` is an opt-out", () => {
    expect(decideKeyword("¡Baja!", ON_PROMO)).toEqual(optOut(PROMO.id))
  })

  it("inner runs of whitespace count as one space", () => {
    expect(decideKeyword("stop \u00a0\t promo", ON_ALL)).toEqual(unsubscribe(PROMO.id))
    expect(decideKeyword("start\u3000\u3000promo", NOBODY)).toEqual(subscribe(PROMO.id))
  })

  it.each([
    "cancel my order",
    "unsubscribe promo",
    "stop the delivery please",
    "start now please",
    "start promo now",
    "stop promo please",
    "stop, promo",
    "stopping",
    "I said stop",
    "стоп",
    "停止"
  ])("%j is a normal message", (text) => {
    expect(decideKeyword(text, ON_ALL)).toEqual(PASS)
  })

  it("with no list in the workspace, nothing is a keyword", () => {
    for (const text of ["start", "subscribe", "stop", "stop all", "start promo", ...ALL_OPT_OUTS]) {
      expect(decideKeyword(text, state([]))).toEqual(PASS)
    }
  })

  it("a quick-reply button's text is handled like typed text", () => {
    // The chat platform hands back the button's title as the message's text.
    expect(decideKeyword("Subscribe 👍", NOBODY)).toEqual(subscribe(NEWS.id))
    expect(decideKeyword("STOP ✋", ON_PROMO)).toEqual(unsubscribe(PROMO.id))
    expect(decideKeyword("Stop promotions", ON_PROMO)).toEqual(PASS)
  })
})

describe("defaultWelcomeMessage", () => {
  it("names the list and says to reply 'stop' to leave", () => {
    const text = defaultWelcomeMessage("Weekly deals")
    expect(text).toContain("Weekly deals")
    expect(text).toContain("'stop'")
  })
})

// ---------------------------------------------------------------------------------------------
// The property: messages built from a small grammar, judged by a reference model that reads the
// grammar's structure, never the text.

type Role = "start" | "stop" | "opt_out"
/** Every keyword as written, with what it is. `arrêt` and `arret` are both spellings of one word. */
const ROLE: Readonly<Record<string, Role>> = {
  start: "start",
  subscribe: "start",
  stop: "stop",
  ...Object.fromEntries(ALL_OPT_OUTS.map((word) => [word, "opt_out" as const]))
}
const SLUG_POOL = ["promo", "news", "vip-club", "deals-2025", "offers", "weekly"]
const NON_LATIN = [
  "стоп",
  "СТОП",
  "ЅТОР", // Cyrillic letters that look like S, T, O, P
  "\u0441ancel", // `cancel` with a Cyrillic с
  "στοπ",
  "ΣΤΑΜΑΤΑ",
  "توقف",
  "إلغاء",
  "停止",
  "取消",
  "ストップ",
  "정지"
]
/** Words that are neither keywords, nor slugs, nor `all`. */
const WORDS = [
  "hello",
  "stopper",
  "stops",
  "starting",
  "subscribed",
  "unsubscribed",
  "cancelled",
  "order",
  "please",
  "now",
  "my",
  "sto",
  "al",
  ...NON_LATIN
]
const SPACES = [" ", "  ", "\t", "\n", "\u00a0", "\u3000", "\u2003"]
const PUNCTUATION = ["!", "?", ".", "¡", "¿", "«", "»", '"', "'", "…", "(", ")"]
const EMOJI = ["🙏", "👍🏽", "❤️", "🇩🇪", "👨‍👩‍👧", "🛑"]
const JUNK = [...SPACES, ...PUNCTUATION, ...EMOJI]

/** A keyword (by its spelling in ROLE), another word, or nothing but the junk around it. */
type Head =
  | { readonly kind: "keyword"; readonly word: string }
  | { readonly kind: "other"; readonly word: string }
  | { readonly kind: "none" }
type Arg =
  | { readonly kind: "known"; readonly index: number }
  | { readonly kind: "unknown"; readonly slug: string }
  | { readonly kind: "all" }
  | { readonly kind: "word"; readonly word: string }
interface Message {
  readonly head: Head
  readonly args: ReadonlyArray<Arg>
  readonly casing: "lower" | "upper" | "mixed"
  readonly mask: ReadonlyArray<boolean>
  readonly separators: ReadonlyArray<string>
  readonly prefix: string
  readonly suffix: string
  readonly fullWidth: boolean
  readonly decomposed: boolean
}

const stateArb: fc.Arbitrary<KeywordState> = fc
  .record({
    slugs: fc.oneof(
      { weight: 1, arbitrary: fc.constant<Array<string>>([]) },
      { weight: 5, arbitrary: fc.shuffledSubarray(SLUG_POOL, { minLength: 1, maxLength: 4 }) }
    ),
    defaultAt: fc.option(fc.nat({ max: 3 })),
    subscribedMask: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 })
  })
  .map(({ slugs, defaultAt, subscribedMask }) => {
    const lists = slugs.map((slug, i) => ({ id: `id-${i}-${slug}`, slug, is_default: i === defaultAt }))
    return state(
      lists,
      lists.filter((_, i) => subscribedMask[i]).map((list) => list.id)
    )
  })

const junkArb = fc.array(fc.constantFrom(...JUNK), { maxLength: 4 }).map((parts) => parts.join(""))

const messageArb = (s: KeywordState): fc.Arbitrary<Message> => {
  const unknownSlugs = [...SLUG_POOL.filter((slug) => !s.lists.some((list) => list.slug === slug)), "nosuch", "x1"]
  const args: Array<fc.WeightedArbitrary<Arg>> = [
    { weight: 1, arbitrary: fc.constantFrom(...unknownSlugs).map((slug) => ({ kind: "unknown", slug })) },
    { weight: 1, arbitrary: fc.constant({ kind: "all" }) },
    { weight: 1, arbitrary: fc.constantFrom(...WORDS).map((word) => ({ kind: "word", word })) }
  ]
  if (s.lists.length > 0) {
    args.push({ weight: 3, arbitrary: fc.nat({ max: s.lists.length - 1 }).map((index) => ({ kind: "known", index })) })
  }
  return fc.record({
    head: fc.oneof(
      // Each kind of keyword as often as the others, whatever the number of its spellings.
      ...[["start", "subscribe"], ["stop"], ALL_OPT_OUTS].map((words) => ({
        weight: 2,
        arbitrary: fc.constantFrom(...words).map((word): Head => ({ kind: "keyword", word }))
      })),
      {
        weight: 2,
        arbitrary: fc.constantFrom(...WORDS, ...SLUG_POOL, "all").map((word): Head => ({ kind: "other", word }))
      },
      { weight: 1, arbitrary: fc.constant<Head>({ kind: "none" }) }
    ),
    // Mostly bare or one argument, the shapes keywords take; sometimes more.
    args: fc.oneof(
      { weight: 2, arbitrary: fc.constant([]) },
      { weight: 3, arbitrary: fc.tuple(fc.oneof(...args)) },
      { weight: 1, arbitrary: fc.array(fc.oneof(...args), { minLength: 2, maxLength: 3 }) }
    ),
    casing: fc.constantFrom("lower", "upper", "mixed"),
    mask: fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
    separators: fc.array(fc.array(fc.constantFrom(...SPACES), { minLength: 1, maxLength: 3 }).map((p) => p.join("")), {
      minLength: 3,
      maxLength: 3
    }),
    prefix: junkArb,
    suffix: junkArb,
    fullWidth: fc.boolean(),
    decomposed: fc.boolean()
  })
}

const FULL_WIDTH_OFFSET = 0xff01 - 0x21
const toFullWidth = (text: string): string =>
  [...text]
    .map((c) => {
      const code = c.charCodeAt(0)
      if (c === " ") return "\u3000"
      return code >= 0x21 && code <= 0x7e ? String.fromCharCode(code + FULL_WIDTH_OFFSET) : c
    })
    .join("")

/** The message's text, as a person (or a button) might send it. */
const render = (m: Message, s: KeywordState): string => {
  const argText = (arg: Arg): string => {
    switch (arg.kind) {
      case "known":
        return s.lists[arg.index]!.slug
      case "unknown":
        return arg.slug
      case "all":
        return "all"
      case "word":
        return arg.word
    }
  }
  const tokens = [...(m.head.kind === "none" ? [] : [m.head.word]), ...m.args.map(argText)]
  const cased = tokens.map((token) =>
    [...token]
      .map((c, i) =>
        m.casing === "upper" || (m.casing === "mixed" && m.mask[i % m.mask.length]) ? c.toUpperCase() : c.toLowerCase()
      )
      .join("")
  )
  const body = cased.map((token, i) => (i === 0 ? token : m.separators[(i - 1) % m.separators.length] + token)).join("")
  const text = m.prefix + body + m.suffix
  const wide = m.fullWidth ? toFullWidth(text) : text
  return m.decomposed ? wide.normalize("NFD") : wide
}

/** The reference: the rules as a table over the message's structure. */
const model = (m: Message, s: KeywordState): KeywordOutcome => {
  if (s.lists.length === 0 || m.head.kind !== "keyword") return PASS
  const role = ROLE[m.head.word]!
  const subscribedIds = s.lists.map((list) => list.id).filter((id) => s.subscribed.has(id))
  const leaveAll: KeywordOutcome = subscribedIds.length === 0 ? PASS : unsubscribe(...subscribedIds)
  if (m.args.length > 1) return PASS
  const arg = m.args[0]
  if (arg === undefined) {
    const byDefault = s.lists.find((list) => list.is_default)
    const bare: Record<Role, KeywordOutcome> = {
      start: byDefault ? subscribe(byDefault.id) : PASS,
      stop: leaveAll,
      opt_out: optOut(...subscribedIds)
    }
    return bare[role]
  }
  if (role === "opt_out") return PASS
  if (role === "stop" && arg.kind === "all") return leaveAll
  if (arg.kind !== "known") return PASS
  const list = s.lists[arg.index]!
  if (role === "start") return subscribe(list.id)
  return s.subscribed.has(list.id) ? unsubscribe(list.id) : PASS
}

const hasNonLatin = (m: Message): boolean =>
  (m.head.kind !== "none" && NON_LATIN.includes(m.head.word)) ||
  m.args.some((arg) => arg.kind === "word" && NON_LATIN.includes(arg.word))

describe("decideKeyword against a reference model", () => {
  it("agrees with the model on generated messages and workspaces", () => {
    fc.assert(
      fc.property(
        stateArb.chain((s) => messageArb(s).map((m) => [s, m] as const)),
        ([s, m]) => {
          const outcome = decideKeyword(render(m, s), s)
          expect(outcome).toEqual(model(m, s))
          if (hasNonLatin(m)) expect(outcome).toEqual(PASS)
        }
      ),
      { numRuns: 3000 }
    )
  })

  it("passes on every message made of words in other scripts", () => {
    fc.assert(
      fc.property(
        stateArb,
        fc.array(fc.constantFrom(...NON_LATIN), { minLength: 1, maxLength: 3 }),
        junkArb,
        junkArb,
        (s, words, prefix, suffix) => {
          expect(decideKeyword(prefix + words.join(" ") + suffix, s)).toEqual(PASS)
        }
      ),
      { numRuns: 1000 }
    )
  })
})
