// The opt-in keywords of the chat-app channel (spec: "Behaviour rules: opt-in keywords"), as pure
// functions: what a message's text is, and what it does to the contact's subscriptions.

/** A keyword a message's text is: subscribe, leave (slug null: every list) or a total opt-out. */
export type KeywordCommand =
  | { readonly kind: "subscribe"; readonly slug: string | null }
  | { readonly kind: "unsubscribe"; readonly slug: string | null }
  | { readonly kind: "opt_out" }

/** The single-word opt-outs, normalised. */
export const OPT_OUT_WORDS: ReadonlyArray<string> = [
  "unsubscribe",
  "cancel",
  "stopp",
  "abmelden",
  "abbestellen",
  "arret",
  "baja",
  "cancelar",
  "sair",
  "annulla"
]

const SUBSCRIBE_WORDS: ReadonlyArray<string> = ["start", "subscribe"]
// A word that could be a list's slug once normalised; anything else after `start`/`stop` is prose.
const SLUG_WORD = /^[a-z0-9-]+$/u
// Everything that is neither a letter nor a digit: spaces, punctuation, symbols, emoji.
const EDGES = /^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu

/** Normalises (fold case, accents, width, trim punctuation/emoji/space) — exported for reuse and tests. */
export const normalizeKeywordText = (text: string): string =>
  text
    // Lower case first, so a capital's own marks (İ → i̇) come apart and go with the rest.
    .toLowerCase()
    // Compatibility decomposition folds full-width forms (ＳＴＯＰ) and splits ê into e + ̂.
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .replace(EDGES, "")
    .replace(/\s+/gu, " ")

/** The command a message's text is, or null for a normal message. */
export const parseKeyword = (text: string): KeywordCommand | null => {
  const words = normalizeKeywordText(text).split(" ")
  const [first = "", second] = words
  if (words.length === 1) {
    if (SUBSCRIBE_WORDS.includes(first)) return { kind: "subscribe", slug: null }
    if (first === "stop") return { kind: "unsubscribe", slug: null }
    if (OPT_OUT_WORDS.includes(first)) return { kind: "opt_out" }
    return null
  }
  if (words.length !== 2 || second === undefined || !SLUG_WORD.test(second)) return null
  if (SUBSCRIBE_WORDS.includes(first)) return { kind: "subscribe", slug: second }
  // `stop all` means every list, even when a list is named `all`.
  if (first === "stop") return { kind: "unsubscribe", slug: second === "all" ? null : second }
  return null
}

/** The workspace's lists and the contact's subscriptions, as a keyword sees them. */
export interface KeywordState {
  readonly lists: ReadonlyArray<{ readonly id: string; readonly slug: string; readonly is_default: boolean }>
  /** Ids of the lists the contact is subscribed to now. */
  readonly subscribed: ReadonlySet<string>
}

/** What a message does: passes on as a normal message, or is consumed with these changes. */
export type KeywordOutcome =
  | { readonly kind: "pass" }
  | { readonly kind: "subscribe"; readonly listId: string }
  | { readonly kind: "unsubscribe"; readonly listIds: ReadonlyArray<string> }
  | { readonly kind: "opt_out"; readonly listIds: ReadonlyArray<string> }

const PASS: KeywordOutcome = { kind: "pass" }

/** What a message does given the workspace's lists and the contact's subscriptions. */
export const decideKeyword = (text: string, state: KeywordState): KeywordOutcome => {
  // Without a single list there are no keywords: `stop` is just a word.
  if (state.lists.length === 0) return PASS
  const command = parseKeyword(text)
  if (command === null) return PASS
  // Lists are listed in the workspace's order; the ones subscribed keep that order.
  const subscribed = state.lists.filter((list) => state.subscribed.has(list.id)).map((list) => list.id)
  const named = (slug: string) => state.lists.find((list) => list.slug.toLowerCase() === slug)
  switch (command.kind) {
    case "subscribe": {
      const list = command.slug === null ? state.lists.find((l) => l.is_default) : named(command.slug)
      // Subscribing again is no change, but the keyword is still consumed and welcomed again.
      return list === undefined ? PASS : { kind: "subscribe", listId: list.id }
    }
    case "unsubscribe": {
      if (command.slug === null) return subscribed.length === 0 ? PASS : { kind: "unsubscribe", listIds: subscribed }
      const list = named(command.slug)
      return list === undefined || !state.subscribed.has(list.id) ? PASS : { kind: "unsubscribe", listIds: [list.id] }
    }
    case "opt_out":
      // Consumed even when subscribed to nothing: the opt-out itself is recorded on the contact.
      return { kind: "opt_out", listIds: subscribed }
  }
}

/** The default welcome message: confirms and says how to leave ('stop'). `listName` is the list's name. */
export const defaultWelcomeMessage = (listName: string): string =>
  `You are now subscribed to ${listName}. Reply 'stop' to leave.`
