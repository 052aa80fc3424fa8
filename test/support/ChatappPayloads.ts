import fc from "fast-check"

/*
 * fast-check arbitraries of what the chat-app operator POSTs to `/webhooks/chatapp`: payloads in its
 * real shape (`object`, `entry[].changes[]` with `field` and `value`) with realistic variation (several
 * entries and changes, every message type, statuses, other fields, known and unknown numbers, repeated
 * wamids and senders) and hostile variation (missing, extra and wrong-typed fields anywhere, numbers as
 * strings and back, huge strings, unicode, control characters, lone surrogates, prototype-ish keys),
 * and raw bodies that are not payloads at all (not JSON, JSON arrays and scalars, deep nesting,
 * invalid UTF-8). Everything here is data: signing and posting are the test's business.
 */

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

/** What the generated payloads refer to. */
export interface ChatappWorld {
  /** `metadata.phone_number_id`s of active channels (messages to them are stored). */
  readonly knownPhoneNumberIds: ReadonlyArray<string>
  /** Business account ids (`entry[].id`) of those channels. */
  readonly businessAccountIds: ReadonlyArray<string>
  /** Media ids messages may carry: some served by the fake operator, some not, some failing. */
  readonly mediaIds: ReadonlyArray<string>
  /** How many distinct wamids the pool holds: the smaller, the more duplicates (default 600). */
  readonly wamidPool?: number
  /** How many distinct senders each number sees (default 40). */
  readonly senderPool?: number
}

/** A body to post, and a short description of what it is for reports. */
export interface ChatappBody {
  readonly label: string
  readonly bytes: Uint8Array
}

const encoder = new TextEncoder()

/**
 * The body as readable text for a report: UTF-8 (bytes that are not, as U+FFFD), runs of one
 * character past 20 written `<c ×n>`, cut at `max` characters.
 */
export const describeBody = (body: ChatappBody, max = 2000): string => {
  const text = Buffer.from(body.bytes).toString("utf8").replace(/([\s\S])\1{20,}/gu, (run, c: string) => `<${c} ×${run.length / c.length}>`)
  return `${body.label} (${body.bytes.length} bytes): ${text.length > max ? `${text.slice(0, max)}…` : text}`
}

/** A body that fast-check prints readably in a counterexample. */
const bodyOf = (label: string, bytes: Uint8Array): ChatappBody => {
  const body = { label, bytes }
  return Object.defineProperty(body, fc.toStringMethod, { value: () => JSON.stringify(describeBody(body, 4000)), enumerable: false })
}

// ---------------------------------------------------------------------------------------------
// Strings

/** Strings an attacker or a buggy client would try; every one is valid JS, some are not valid UTF-16. */
export const NASTY_STRINGS: ReadonlyArray<string> = [
  "",
  " ",
  "\u0000",
  "nul\u0000inside",
  "\t\r\n",
  "\u202eright-to-left override",
  "\ufeffbom",
  "\ud800",
  "lone \udfff low",
  "pair split \ud83d",
  "👨‍👩‍👧‍👦",
  "🏳️‍🌈🇺🇸",
  "Z̸̡̢̛̗̘̙̜̝̞̟̠̀́̂̃̄̅̆̇̉̊̋̌̍̎̏̐̑̒̓̔̽̾̿̀́͂̓̈́͆͊͋͌͐͑͒͗͛ͣͤͥͦͧͨͩͪͫͬͭͮͯ͘͜͟͢͝͞͠͡a",
  "مرحبا بالعالم",
  "こんにちは世界",
  "'; DROP TABLE messages; --",
  "\" OR 1=1 --",
  "${process.exit()}",
  "{{7*7}}",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "%00%ff",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "NaN",
  "Infinity",
  "-0",
  "1e309",
  "null",
  "true",
  "0x1F",
  "٣٤٥",
  "١٢٣٤٥٦٧"
]

/** A deterministic, incompressible string of `length` characters from `seed` (xorshift over an alphabet). */
const noise = (seed: number, length: number, alphabet: string): string => {
  let x = (seed | 0) || 0x9e3779b9
  const chars = [...alphabet]
  const out: Array<string> = []
  for (let i = 0; i < length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out.push(chars[(x >>> 0) % chars.length]!)
  }
  return out.join("")
}

const ALPHABETS = [
  "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
  "0123456789",
  "aé中😀ß𝔘\u0301\u200d ",
  "\u0000\u0001\u001f\u007f\u2028\u2029\ud800\udc00"
]

/** A long string (1 to 30 thousand characters), random enough not to compress. */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.integer(), fc.integer({ min: 1_000, max: 30_000 }), fc.nat({ max: ALPHABETS.length - 1 }))
  .map(([seed, length, alphabet]) => noise(seed, length, ALPHABETS[alphabet]!))

/** Any string: mostly ordinary, often unicode, sometimes nasty, rarely huge (a payload holds dozens). */
export const anyString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ maxLength: 40 }), weight: 40 },
  { arbitrary: fc.string({ unit: "grapheme", maxLength: 30 }), weight: 30 },
  { arbitrary: fc.string({ unit: "binary", maxLength: 30 }), weight: 20 },
  { arbitrary: fc.constantFrom(...NASTY_STRINGS), weight: 30 },
  { arbitrary: hugeString, weight: 2 }
)

/** Message text: what people actually send, plus the hostile kind. */
const textBody: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom("Hi", "Hello, I need help with my order", "¿Dónde está mi pedido?", "ok 👍", "Gracias 🙏🏽"), weight: 3 },
  { arbitrary: anyString, weight: 3 },
  { arbitrary: fc.string({ minLength: 4000, maxLength: 5000 }), weight: 1 }
)

/** Any JSON value, a little deep. */
const anyJson: fc.Arbitrary<Json> = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, weight: 4 },
  { arbitrary: anyString, weight: 2 },
  { arbitrary: fc.constantFrom<Json>(null, true, false, 0, -1, 1.5, 1e21, -1e-7, Number.MAX_SAFE_INTEGER + 2, [], {}), weight: 2 }
)

// ---------------------------------------------------------------------------------------------
// Identifiers

/** A wamid from a pool, so later payloads repeat earlier ids (redeliveries, statuses of known messages). */
export const wamidArb = (pool = 600): fc.Arbitrary<string> =>
  fc.nat({ max: pool - 1 }).map((n) => `wamid.HBgL${Buffer.from(`MTU1NTAw${n}`).toString("base64").replace(/=+$/, "")}FQIAEhgU${n}A==`)

/** The id of a message as it arrives: a pooled wamid mostly; sometimes odd, wrong-typed or missing. */
const messageIdArb = (pool: number): fc.Arbitrary<Json | undefined> =>
  fc.oneof(
    { arbitrary: wamidArb(pool), weight: 20 },
    { arbitrary: anyString, weight: 2 },
    { arbitrary: fc.constantFrom<Json | undefined>(undefined, null, "", 12345, ["wamid.X"], { id: "wamid.X" }), weight: 1 }
  )

/** A sender's wa_id: one of a pool of numbers per world; sometimes formatted, numeric or junk. */
const senderArb = (pool: number): fc.Arbitrary<Json | undefined> =>
  fc.oneof(
    { arbitrary: fc.nat({ max: pool - 1 }).map((n) => `1555000${String(n).padStart(4, "0")}`), weight: 20 },
    { arbitrary: fc.nat({ max: pool - 1 }).map((n) => `+1 (555) 000-${String(n).padStart(4, "0")}`), weight: 1 },
    { arbitrary: fc.nat({ max: pool - 1 }).map((n) => Number(`1555000${String(n).padStart(4, "0")}`)), weight: 1 },
    { arbitrary: anyString, weight: 1 },
    { arbitrary: fc.constantFrom<Json | undefined>(undefined, null, "", "٣٤٥٦٧٨٩", "0", "abc"), weight: 1 }
  )

/** A phone number id: a known one (sometimes as a number), an unknown one, or junk. */
const phoneNumberIdArb = (world: ChatappWorld): fc.Arbitrary<Json | undefined> =>
  fc.oneof(
    { arbitrary: fc.constantFrom(...world.knownPhoneNumberIds), weight: 12 },
    { arbitrary: fc.constantFrom(...world.knownPhoneNumberIds).map((id) => Number(id)), weight: 2 },
    { arbitrary: fc.constantFrom("999000111", "106540352242922", "0"), weight: 2 },
    { arbitrary: anyJson, weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 }
  )

/** A Unix timestamp the way the operator sends it (a string of seconds), or not. */
const timestampArb: fc.Arbitrary<Json | undefined> = fc.oneof(
  { arbitrary: fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }).map(String), weight: 8 },
  { arbitrary: fc.integer({ min: 1_700_000_000, max: 1_800_000_000 }), weight: 2 },
  {
    arbitrary: fc.constantFrom<Json | undefined>(
      undefined, null, "", "0", "-1", "99999999999999", "1e10", "2025-11-26T10:00:00Z", 1.5e18, -5, "٣٤٥"
    ),
    weight: 1
  }
)

const mimeTypeArb = fc.constantFrom(
  "image/jpeg", "image/png", "image/webp", "application/pdf", "audio/ogg; codecs=opus", "video/mp4", "text/plain",
  "application/x-msdownload", "", "not a mime type"
)

// ---------------------------------------------------------------------------------------------
// Messages

/** Optional record fields: present or left out, one by one. */
const some = <T extends Record<string, fc.Arbitrary<unknown>>>(fields: T) =>
  fc.record(fields, { requiredKeys: [] })

const contextArb = (pool: number) =>
  some({
    from: senderArb(pool),
    id: wamidArb(pool),
    forwarded: fc.boolean(),
    frequently_forwarded: fc.boolean(),
    referred_product: some({ catalog_id: fc.string(), product_retailer_id: fc.string() })
  })

const mediaBody = (world: ChatappWorld, type: string) =>
  fc.record({
    id: fc.oneof(
      { arbitrary: fc.constantFrom(...world.mediaIds), weight: 10 },
      { arbitrary: anyJson, weight: 1 }
    ),
    mime_type: mimeTypeArb,
    sha256: fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), anyString),
    ...(type === "document" ? { filename: fc.oneof(fc.constantFrom("invoice.pdf", "../../x.pdf", "a\u0000b.pdf", "😀.pdf", ""), anyString) } : {}),
    ...(type === "audio" ? { voice: fc.boolean() } : {}),
    ...(type === "sticker" ? { animated: fc.boolean() } : {}),
    ...(type === "sticker" || type === "audio" ? {} : { caption: fc.option(textBody, { nil: undefined }) })
  }, { requiredKeys: ["id"] })

const contactCardArb = some({
  name: some({ formatted_name: anyString, first_name: anyString, last_name: anyString }),
  phones: fc.array(some({ phone: anyString, wa_id: fc.string(), type: fc.constantFrom("CELL", "HOME", "WORK") }), { maxLength: 3 }),
  emails: fc.array(some({ email: anyString, type: fc.constantFrom("HOME", "WORK") }), { maxLength: 2 }),
  org: some({ company: anyString, title: anyString }),
  birthday: fc.constantFrom("1990-01-01", "not a date"),
  urls: fc.array(some({ url: anyString }), { maxLength: 2 })
})

const interactiveArb = fc.oneof(
  fc.record({ type: fc.constant("button_reply"), button_reply: some({ id: anyString, title: anyString }) }),
  fc.record({ type: fc.constant("list_reply"), list_reply: some({ id: anyString, title: anyString, description: anyString }) }),
  fc.record({
    type: fc.constant("nfm_reply"),
    nfm_reply: some({
      name: fc.constantFrom("flow", "address_message"),
      body: fc.constantFrom("Sent", "", "📦"),
      response_json: fc.oneof(fc.json({ maxDepth: 3 }), anyString)
    })
  }),
  fc.record({ type: fc.oneof(anyString, anyJson), button_reply: anyJson })
)

/** Types the host does not read: kept as `unsupported`. */
const UNKNOWN_TYPES = [
  "unsupported", "unknown", "order", "system", "request_welcome", "ephemeral", "referral", "edit", "revoke",
  "__proto__", "constructor", "toString", "hasOwnProperty", "valueOf", "TEXT", "Image"
]

/** One element of `value.messages`, of every type the operator sends and some it does not. */
export const messageArb = (world: ChatappWorld): fc.Arbitrary<Record<string, unknown>> => {
  const pool = world.wamidPool ?? 600
  const senders = world.senderPool ?? 40
  const base = some({
    from: senderArb(senders),
    id: messageIdArb(pool),
    timestamp: timestampArb,
    context: contextArb(pool)
  })
  const typed = fc.oneof(
    { arbitrary: textBody.map((body) => ({ type: "text", text: { body, preview_url: false } })), weight: 8 },
    {
      arbitrary: fc.constantFrom("image", "document", "audio", "video", "sticker").chain((type) =>
        mediaBody(world, type).map((body) => ({ type, [type]: body }))
      ),
      weight: 6
    },
    {
      arbitrary: some({
        latitude: fc.oneof(fc.double({ min: -90, max: 90, noNaN: true }), anyJson),
        longitude: fc.oneof(fc.double({ min: -180, max: 180, noNaN: true }), anyJson),
        name: anyString,
        address: anyString,
        url: anyString
      }).map((location) => ({ type: "location", location })),
      weight: 2
    },
    { arbitrary: fc.array(contactCardArb, { maxLength: 3 }).map((contacts) => ({ type: "contacts", contacts })), weight: 2 },
    { arbitrary: some({ text: anyString, payload: anyString }).map((button) => ({ type: "button", button })), weight: 2 },
    { arbitrary: interactiveArb.map((interactive) => ({ type: "interactive", interactive })), weight: 3 },
    {
      arbitrary: some({ message_id: wamidArb(pool), emoji: fc.constantFrom("👍", "❤️", "", "😂", "🏳️‍🌈") })
        .map((reaction) => ({ type: "reaction", reaction })),
      weight: 2
    },
    {
      arbitrary: fc.record({
        type: fc.oneof(fc.constantFrom(...UNKNOWN_TYPES), anyString),
        errors: fc.constantFrom(
          [{ code: 131051, title: "Message type unknown", message: "Message type unknown", error_data: { details: "Message type is currently not supported." } }],
          [],
          "not an array"
        ),
        system: some({ body: anyString, wa_id: fc.string(), type: fc.constant("user_changed_number") })
      }, { requiredKeys: ["type"] }),
      weight: 3
    },
    { arbitrary: fc.record({ type: anyJson }), weight: 1 }
  )
  return fc.tuple(base, typed).map(([b, t]) => ({ ...b, ...t }))
}

// ---------------------------------------------------------------------------------------------
// Statuses

const errorObjectArb = some({
  code: fc.oneof(fc.constantFrom(131047, 131026, 131049, 130472, 470, 131000), fc.constantFrom("131047", "x"), anyJson),
  title: anyString,
  message: anyString,
  error_data: fc.oneof(some({ details: anyString }), anyJson),
  href: fc.constant("https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/")
})

/** One element of `value.statuses`: sent, delivered, read, failed (with errors), or something else. */
export const statusArb = (world: ChatappWorld): fc.Arbitrary<Record<string, unknown>> =>
  some({
    id: messageIdArb(world.wamidPool ?? 600),
    status: fc.oneof(
      { arbitrary: fc.constantFrom("sent", "delivered", "read", "failed"), weight: 10 },
      { arbitrary: fc.constantFrom("deleted", "warning", "READ", "played", "", "constructor"), weight: 2 },
      { arbitrary: anyJson, weight: 1 }
    ),
    timestamp: timestampArb,
    recipient_id: senderArb(world.senderPool ?? 40),
    conversation: some({
      id: fc.string(),
      expiration_timestamp: timestampArb,
      origin: some({ type: fc.constantFrom("service", "marketing", "utility", "authentication") })
    }),
    pricing: some({ billable: fc.boolean(), pricing_model: fc.constantFrom("CBP", "PMP"), category: fc.constantFrom("service", "utility") }),
    errors: fc.oneof(fc.array(errorObjectArb, { maxLength: 2 }), anyJson)
  })

// ---------------------------------------------------------------------------------------------
// Changes, entries, payloads

const metadataArb = (world: ChatappWorld) =>
  some({ display_phone_number: fc.constantFrom("15551234567", "+1 555-123-4567"), phone_number_id: phoneNumberIdArb(world) })

/** A `messages` change: contacts, messages and statuses for one number. */
const messagesValueArb = (world: ChatappWorld) =>
  fc.record({
    messaging_product: fc.constantFrom("whatsapp", "WHATSAPP", ""),
    metadata: metadataArb(world),
    contacts: fc.array(
      some({ profile: some({ name: fc.oneof(fc.constantFrom("Maria", "José 🌵", "李雷"), anyString) }), wa_id: senderArb(world.senderPool ?? 40) }),
      { maxLength: 3 }
    ),
    messages: fc.array(messageArb(world), { maxLength: 4 }),
    statuses: fc.array(statusArb(world), { maxLength: 4 }),
    errors: fc.array(errorObjectArb, { maxLength: 1 })
  }, { requiredKeys: ["metadata"] })

/** Field names: the operator's, and junk (prototype keys included: a lookup table must not trip on them). */
const OTHER_FIELDS = [
  "flows", "phone_number_quality_update", "user_preferences", "account_update", "message_template_status_update",
  "template_category_update", "business_capability_update", "security", "history", "smb_message_echoes"
]
const JUNK_FIELDS = ["", "MESSAGES", "messages ", "__proto__", "constructor", "toString", "hasOwnProperty", "valueOf"]

const otherValueArb = (world: ChatappWorld, field: string): fc.Arbitrary<Json | undefined> => {
  switch (field) {
    case "flows":
      return some({
        event: fc.constantFrom("FLOW_STATUS_CHANGE", "CLIENT_ERROR_RATE", "ENDPOINT_ERROR_RATE", "ENDPOINT_AVAILABILITY"),
        message: anyString,
        flow_id: fc.stringMatching(/^\d{10,16}$/),
        old_status: fc.constantFrom("DRAFT", "PUBLISHED", "THROTTLED"),
        new_status: fc.constantFrom("PUBLISHED", "BLOCKED", "DEPRECATED"),
        alert_state: fc.constantFrom("ACTIVATED", "DEACTIVATED")
      }) as fc.Arbitrary<Json>
    case "phone_number_quality_update":
      return some({
        display_phone_number: fc.constant("15551234567"),
        event: fc.constantFrom("FLAGGED", "UNFLAGGED", "UPGRADE", "DOWNGRADE"),
        current_limit: fc.constantFrom("TIER_50", "TIER_250", "TIER_1K", "TIER_10K", "TIER_UNLIMITED")
      }) as fc.Arbitrary<Json>
    case "user_preferences":
      return some({
        messaging_product: fc.constant("whatsapp"),
        metadata: metadataArb(world),
        contacts: fc.array(some({ profile: some({ name: anyString }), wa_id: senderArb(world.senderPool ?? 40) }), { maxLength: 2 }),
        user_preferences: fc.array(
          some({
            wa_id: senderArb(world.senderPool ?? 40),
            detail: anyString,
            category: fc.constant("marketing_messages"),
            value: fc.constantFrom("stop", "resume"),
            timestamp: timestampArb
          }),
          { maxLength: 2 }
        )
      }) as fc.Arbitrary<Json>
    default:
      return fc.option(anyJson, { nil: undefined })
  }
}

/** One element of `entry[].changes`. */
export const changeArb = (world: ChatappWorld): fc.Arbitrary<Record<string, unknown>> =>
  fc.oneof(
    { arbitrary: messagesValueArb(world).map((value) => ({ field: "messages", value })), weight: 10 },
    {
      arbitrary: fc.constantFrom(...OTHER_FIELDS).chain((field) => otherValueArb(world, field).map((value) => ({ field, value }))),
      weight: 3
    },
    {
      arbitrary: fc.tuple(fc.oneof(fc.constantFrom(...JUNK_FIELDS), anyString), fc.option(anyJson, { nil: undefined }))
        .map(([field, value]) => ({ field, value })),
      weight: 1
    },
    { arbitrary: fc.record({ value: messagesValueArb(world) }), weight: 1 },
    { arbitrary: anyJson.map((value) => ({ field: "messages", value })), weight: 1 }
  )

/** One element of `entry`. */
export const entryArb = (world: ChatappWorld): fc.Arbitrary<Record<string, unknown>> =>
  some({
    id: fc.oneof(
      { arbitrary: fc.constantFrom(...world.businessAccountIds), weight: 6 },
      { arbitrary: fc.constantFrom(...world.businessAccountIds).map(Number), weight: 1 },
      { arbitrary: anyJson, weight: 1 }
    ),
    time: timestampArb,
    changes: fc.array(changeArb(world), { minLength: 1, maxLength: 3 })
  }).map((entry) => ("changes" in entry ? entry : { ...entry, changes: [] }))

/** A payload object in the operator's shape (before any hostile edits). */
export const payloadObjectArb = (world: ChatappWorld): fc.Arbitrary<Record<string, unknown>> =>
  fc.record({
    object: fc.oneof(
      { arbitrary: fc.constant("whatsapp_business_account"), weight: 20 },
      { arbitrary: fc.constantFrom("page", "instagram", "WHATSAPP_BUSINESS_ACCOUNT"), weight: 1 },
      { arbitrary: anyJson, weight: 1 }
    ),
    entry: fc.array(entryArb(world), { minLength: 1, maxLength: 3 })
  }, { requiredKeys: ["entry"] })

// ---------------------------------------------------------------------------------------------
// Hostile edits

/** One edit somewhere in a JSON tree: the place is `at` modulo the number of places. */
interface Edit {
  readonly at: number
  readonly kind: "delete" | "replace" | "retype" | "add" | "deep"
  readonly key: string
  readonly value: Json
}

const editArb: fc.Arbitrary<Edit> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom<Edit["kind"]>("delete", "replace", "retype", "retype", "add", "add", "deep"),
  key: fc.oneof(fc.constantFrom("__proto__", "constructor", "id", "type", "from", "extra", "field", "value", "body"), fc.string({ maxLength: 8 })),
  value: anyJson
})

/** A marker that serialization replaces with a deeply nested array (see `serialize`). */
const DEEP = "\u0000deep\u0000"

/** Every (container, key) pair of the tree, parents before children. */
const places = (root: unknown): Array<readonly [Record<string, unknown> | Array<unknown>, string | number]> => {
  const out: Array<readonly [Record<string, unknown> | Array<unknown>, string | number]> = []
  const walk = (node: unknown) => {
    if (Array.isArray(node)) {
      node.forEach((child, i) => {
        out.push([node, i])
        walk(child)
      })
    } else if (node !== null && typeof node === "object") {
      for (const key of Object.keys(node)) {
        out.push([node as Record<string, unknown>, key])
        walk((node as Record<string, unknown>)[key])
      }
    }
  }
  walk(root)
  return out
}

/** The same value with its type changed: a number as a string, a string as a number, a scalar as an array, … */
const retype = (value: unknown): unknown => {
  if (typeof value === "string") return /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : [value]
  if (typeof value === "number") return String(value)
  if (typeof value === "boolean") return value ? "true" : 0
  if (Array.isArray(value)) return value[0] ?? {}
  if (value === null) return "null"
  if (typeof value === "object") return [value]
  return null
}

const applyEdit = (root: Record<string, unknown>, edit: Edit): void => {
  const all = places(root)
  if (all.length === 0) return
  const [container, key] = all[edit.at % all.length]!
  const current = (container as Record<string | number, unknown>)[key]
  switch (edit.kind) {
    case "delete":
      if (Array.isArray(container)) container.splice(key as number, 1)
      else delete container[key as string]
      return
    case "replace":
      ;(container as Record<string | number, unknown>)[key] = edit.value
      return
    case "retype":
      ;(container as Record<string | number, unknown>)[key] = retype(current)
      return
    case "deep":
      ;(container as Record<string | number, unknown>)[key] = DEEP
      return
    case "add":
      if (current !== null && typeof current === "object" && !Array.isArray(current)) {
        // defineProperty: a `__proto__` key becomes an own property, as JSON.parse would make it.
        Object.defineProperty(current, edit.key, { value: edit.value, enumerable: true, writable: true, configurable: true })
      } else if (Array.isArray(current)) current.push(edit.value)
  }
}

/** Serializes `value`, replacing each DEEP marker by an array nested `depth` deep. */
const serialize = (value: unknown, depth: number, pretty: boolean): string => {
  const text = JSON.stringify(value, null, pretty ? 2 : undefined)
  const marker = JSON.stringify(DEEP)
  return text.includes(marker) ? text.split(marker).join(`${"[".repeat(depth)}${"]".repeat(depth)}`) : text
}

// ---------------------------------------------------------------------------------------------
// Bodies

/**
 * A payload in the operator's shape, as bytes: a realistic object with zero to three hostile edits
 * (fields deleted, replaced, retyped, added, or made deeply nested), serialized compact or pretty.
 */
export const payloadBodyArb = (world: ChatappWorld): fc.Arbitrary<ChatappBody> =>
  fc.record({
    payload: payloadObjectArb(world),
    // Half the payloads as generated, half edited.
    edits: fc.option(fc.array(editArb, { minLength: 1, maxLength: 3 }), { nil: undefined, freq: 2 }),
    depth: fc.oneof(fc.integer({ min: 10, max: 200 }), fc.integer({ min: 2_000, max: 20_000 })),
    pretty: fc.boolean()
  }).map(({ payload, edits, depth, pretty }) => {
    const copy = structuredClone(payload)
    for (const edit of edits ?? []) applyEdit(copy, edit)
    const text = serialize(copy, depth, pretty)
    return bodyOf(`payload${edits === undefined ? "" : ` with edits ${edits.map((e) => e.kind).join(",")}`}`, encoder.encode(text))
  })

/** Bodies that are not operator payloads: not JSON, other JSON, deep nesting, invalid UTF-8, empty. */
export const garbageBodyArb = (world: ChatappWorld): fc.Arbitrary<ChatappBody> =>
  fc.oneof(
    fc.string({ maxLength: 200 }).map((text) => bodyOf("text", encoder.encode(text))),
    fc.constant(null).map(() => bodyOf("empty", new Uint8Array())),
    fc.json({ maxDepth: 4 }).map((text) => bodyOf("any JSON", encoder.encode(text))),
    fc.array(payloadObjectArb(world), { maxLength: 2 }).map((list) => bodyOf("JSON array of payloads", encoder.encode(JSON.stringify(list)))),
    fc.constantFrom("null", "true", "0", "\"whatsapp_business_account\"", "1e999", "{}", "[]", "{\"object\":\"whatsapp_business_account\"}",
      "{\"object\":\"whatsapp_business_account\",\"entry\":null}", "{\"object\":\"whatsapp_business_account\",\"entry\":{}}",
      "{\"object\":\"whatsapp_business_account\",\"entry\":[null,1,\"x\",[]]}",
      "{\"object\":\"whatsapp_business_account\",\"entry\":[{\"changes\":[null,{},{\"field\":null}]}]}",
      "{\"__proto__\":{\"object\":\"whatsapp_business_account\"},\"entry\":[]}", "{\"object\":", "\ufeff{}")
      .map((text) => bodyOf(`literal ${text.slice(0, 40)}`, encoder.encode(text))),
    fc.integer({ min: 1_000, max: 200_000 }).map((depth) => bodyOf(`array nested ${depth} deep`, encoder.encode(`${"[".repeat(depth)}${"]".repeat(depth)}`))),
    fc.integer({ min: 1_000, max: 50_000 }).map((depth) =>
      bodyOf(`object nested ${depth} deep`, encoder.encode(`${"{\"a\":".repeat(depth)}1${"}".repeat(depth)}`))
    ),
    fc.tuple(payloadObjectArb(world), fc.nat(), fc.constantFrom([0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80]))
      .map(([payload, at, bad]) => {
        const good = encoder.encode(JSON.stringify(payload))
        const cut = at % (good.length + 1)
        const bytes = new Uint8Array(good.length + bad.length)
        bytes.set(good.subarray(0, cut), 0)
        bytes.set(bad, cut)
        bytes.set(good.subarray(cut), cut + bad.length)
        return bodyOf(`invalid UTF-8 ${bad.map((b) => b.toString(16)).join(" ")} at ${cut}`, bytes)
      }),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => bodyOf("random bytes", bytes))
  )

/**
 * A payload in the operator's shape with one value nested very deep (the body stays well under the
 * size limit): a field change's value, a stored part of a message, a status's errors, or a field
 * nothing reads.
 */
export const deepPayloadBodyArb = (world: ChatappWorld): fc.Arbitrary<ChatappBody> =>
  fc.record({
    where: fc.constantFrom("field value", "contacts message", "unknown type errors", "status errors", "unread extra field"),
    depth: fc.integer({ min: 1_000, max: 100_000 }),
    phoneNumberId: fc.constantFrom(...world.knownPhoneNumberIds),
    businessAccountId: fc.constantFrom(...world.businessAccountIds),
    from: senderArb(world.senderPool ?? 40),
    id: wamidArb(world.wamidPool ?? 600),
    field: fc.constantFrom(...OTHER_FIELDS)
  }).map(({ where, depth, phoneNumberId, businessAccountId, from, id, field }) => {
    const messages = (value: Record<string, unknown>) => ({
      field: "messages",
      value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15551234567", phone_number_id: phoneNumberId }, ...value }
    })
    const change = where === "field value"
      ? { field, value: DEEP }
      : where === "contacts message"
      ? messages({ messages: [{ from, id, timestamp: "1764150000", type: "contacts", contacts: DEEP }] })
      : where === "unknown type errors"
      ? messages({ messages: [{ from, id, timestamp: "1764150000", type: "unsupported", errors: DEEP }] })
      : where === "status errors"
      ? messages({ statuses: [{ id, status: "failed", timestamp: "1764150000", recipient_id: from, errors: DEEP }] })
      : messages({ messages: [{ from, id, timestamp: "1764150000", type: "text", text: { body: "deep" }, extra: DEEP }] })
    const payload = { object: "whatsapp_business_account", entry: [{ id: businessAccountId, changes: [change] }] }
    return bodyOf(`${where} nested ${depth} deep`, encoder.encode(serialize(payload, depth, false)))
  })

/** What the operator might POST: mostly payloads in its shape, some garbage. */
export const chatappBodyArb = (world: ChatappWorld): fc.Arbitrary<ChatappBody> =>
  fc.oneof(
    { arbitrary: payloadBodyArb(world), weight: 20 },
    { arbitrary: garbageBodyArb(world), weight: 4 },
    { arbitrary: deepPayloadBodyArb(world), weight: 1 }
  )

/** One text message in the operator's real payload shape, as JSON text: what plain webhook tests post. */
export const textMessagePayload = (message: {
  readonly businessAccountId: string
  readonly phoneNumberId: string
  readonly from: string
  readonly wamid: string
  readonly text: string
}): string =>
  JSON.stringify({
    object: "whatsapp_business_account",
    entry: [{
      id: message.businessAccountId,
      changes: [{
        field: "messages",
        value: {
          messaging_product: "whatsapp",
          metadata: { display_phone_number: "15551234567", phone_number_id: message.phoneNumberId },
          messages: [{ from: message.from, id: message.wamid, timestamp: "1764150000", type: "text", text: { body: message.text } }]
        }
      }]
    }]
  })
