import { createHash, randomBytes } from "node:crypto"
import { Effect } from "effect"
import {
  ChatPlatform,
  type ChatappCredentials,
  type ChatappLibraryTemplate,
  type ChatappTemplate,
  ChatPlatformError,
  type ChatPlatformErrorKind,
  type LibraryQuery
} from "../../src/ports/ChatPlatform.ts"

// ---------------------------------------------------------------------------------------------
// The template library: a few of the operator's kinds of entries, each in several languages.
// ---------------------------------------------------------------------------------------------

type Language = "en_US" | "es_ES" | "pt_BR" | "de_DE" | "fr_FR" | "it_IT"

/** A button's destination; its `text` comes from each language's wording. */
type ButtonSpec =
  | { readonly type: "URL"; readonly url: string; readonly url_suffix_example?: string }
  | { readonly type: "PHONE_NUMBER"; readonly phone_number: string }
  | { readonly type: "QUICK_REPLY" }
  | { readonly type: "OTP"; readonly otp_type: "COPY_CODE" | "ONE_TAP" | "ZERO_TAP" }

/** One language's words of an entry; `buttons` are the button texts, in the entry's button order. */
interface Wording {
  readonly header?: string
  readonly body: string
  readonly footer?: string
  readonly params: ReadonlyArray<string>
  readonly buttons: ReadonlyArray<string>
}

interface LibraryKind {
  readonly name: string
  readonly category: "UTILITY" | "AUTHENTICATION"
  readonly topic: string
  readonly usecase: string
  readonly industry: ReadonlyArray<string>
  readonly paramTypes: ReadonlyArray<string>
  readonly buttons: ReadonlyArray<ButtonSpec>
  readonly wordings: Partial<Record<Language, Wording>>
}

const CALL_US = "+15555550100"

const LIBRARY_KINDS: ReadonlyArray<LibraryKind> = [
  {
    name: "order_confirmation_1",
    category: "UTILITY",
    topic: "ORDER_MANAGEMENT",
    usecase: "ORDER_CONFIRMATION",
    industry: ["E_COMMERCE"],
    paramTypes: ["TEXT", "TEXT"],
    buttons: [{ type: "URL", url: "https://www.example.com/{{1}}", url_suffix_example: "https://www.example.com/orders/12345" }],
    wordings: {
      en_US: { header: "Order confirmed", body: "Hi {{1}}, thank you for your order {{2}}. We'll let you know as soon as it ships.", params: ["Maria", "#12345"], buttons: ["View order"] },
      es_ES: { header: "Pedido confirmado", body: "Hola, {{1}}: gracias por tu pedido {{2}}. Te avisaremos en cuanto se envíe.", params: ["María", "#12345"], buttons: ["Ver pedido"] },
      pt_BR: { header: "Pedido confirmado", body: "Olá, {{1}}! Obrigado pelo seu pedido {{2}}. Avisaremos assim que ele for enviado.", params: ["Maria", "#12345"], buttons: ["Ver pedido"] },
      de_DE: { header: "Bestellung bestätigt", body: "Hallo {{1}}, vielen Dank für deine Bestellung {{2}}. Wir melden uns, sobald sie versandt wurde.", params: ["Maria", "#12345"], buttons: ["Bestellung ansehen"] },
      fr_FR: { header: "Commande confirmée", body: "Bonjour {{1}}, merci pour votre commande {{2}}. Nous vous préviendrons dès son expédition.", params: ["Marie", "#12345"], buttons: ["Voir la commande"] },
      it_IT: { header: "Ordine confermato", body: "Ciao {{1}}, grazie per il tuo ordine {{2}}. Ti avviseremo non appena verrà spedito.", params: ["Maria", "#12345"], buttons: ["Visualizza ordine"] }
    }
  },
  {
    name: "shipment_update_1",
    category: "UTILITY",
    topic: "SHIPPING_UPDATES",
    usecase: "SHIPMENT_CONFIRMATION",
    industry: ["E_COMMERCE"],
    paramTypes: ["TEXT", "DATE"],
    buttons: [{ type: "URL", url: "https://www.example.com/{{1}}", url_suffix_example: "https://www.example.com/track/1Z999AA10123456784" }],
    wordings: {
      en_US: { header: "Your order is on its way", body: "Good news: your order {{1}} has shipped and should arrive by {{2}}.", params: ["#12345", "Friday, March 14"], buttons: ["Track package"] },
      es_ES: { header: "Tu pedido está en camino", body: "Buenas noticias: tu pedido {{1}} se ha enviado y debería llegar el {{2}}.", params: ["#12345", "viernes 14 de marzo"], buttons: ["Seguir envío"] },
      pt_BR: { header: "Seu pedido está a caminho", body: "Boa notícia: seu pedido {{1}} foi enviado e deve chegar até {{2}}.", params: ["#12345", "sexta-feira, 14 de março"], buttons: ["Rastrear pacote"] },
      de_DE: { header: "Deine Bestellung ist unterwegs", body: "Gute Nachricht: Deine Bestellung {{1}} wurde versandt und sollte bis {{2}} ankommen.", params: ["#12345", "Freitag, 14. März"], buttons: ["Sendung verfolgen"] }
    }
  },
  {
    name: "payment_reminder_1",
    category: "UTILITY",
    topic: "PAYMENTS",
    usecase: "PAYMENT_DUE_REMINDER",
    industry: ["FINANCIAL_SERVICES", "E_COMMERCE"],
    paramTypes: ["TEXT", "AMOUNT", "DATE"],
    buttons: [
      { type: "URL", url: "https://www.example.com/{{1}}", url_suffix_example: "https://www.example.com/pay/INV-1001" },
      { type: "PHONE_NUMBER", phone_number: CALL_US }
    ],
    wordings: {
      en_US: { header: "Payment reminder", body: "Hi {{1}}, this is a reminder that your payment of {{2}} is due on {{3}}.", params: ["Maria", "$45.00", "March 14"], buttons: ["Pay now", "Call us"] },
      es_ES: { header: "Recordatorio de pago", body: "Hola, {{1}}: te recordamos que tu pago de {{2}} vence el {{3}}.", params: ["María", "45,00 €", "14 de marzo"], buttons: ["Pagar ahora", "Llámanos"] },
      pt_BR: { header: "Lembrete de pagamento", body: "Olá, {{1}}! Lembramos que seu pagamento de {{2}} vence em {{3}}.", params: ["Maria", "R$ 45,00", "14 de março"], buttons: ["Pagar agora", "Ligue para nós"] },
      fr_FR: { header: "Rappel de paiement", body: "Bonjour {{1}}, nous vous rappelons que votre paiement de {{2}} est dû le {{3}}.", params: ["Marie", "45,00 €", "14 mars"], buttons: ["Payer maintenant", "Nous appeler"] }
    }
  },
  {
    name: "payment_received_1",
    category: "UTILITY",
    topic: "PAYMENTS",
    usecase: "RECEIPT",
    industry: ["FINANCIAL_SERVICES", "E_COMMERCE"],
    paramTypes: ["AMOUNT", "TEXT"],
    buttons: [],
    wordings: {
      en_US: { body: "We received your payment of {{1}} for {{2}}. Thank you!", params: ["$45.00", "invoice INV-1001"], buttons: [] },
      de_DE: { body: "Wir haben deine Zahlung über {{1}} für {{2}} erhalten. Vielen Dank!", params: ["45,00 €", "Rechnung INV-1001"], buttons: [] },
      it_IT: { body: "Abbiamo ricevuto il tuo pagamento di {{1}} per {{2}}. Grazie!", params: ["45,00 €", "la fattura INV-1001"], buttons: [] }
    }
  },
  {
    name: "account_update_1",
    category: "UTILITY",
    topic: "ACCOUNT_UPDATES",
    usecase: "ACCOUNT_DETAILS_CHANGED",
    industry: ["FINANCIAL_SERVICES", "E_COMMERCE"],
    paramTypes: ["TEXT", "TEXT"],
    buttons: [{ type: "QUICK_REPLY" }, { type: "QUICK_REPLY" }],
    wordings: {
      en_US: { header: "Account updated", body: "Hi {{1}}, the {{2}} on your account was changed. If this wasn't you, let us know right away.", params: ["Maria", "email address"], buttons: ["It was me", "It wasn't me"] },
      es_ES: { header: "Cuenta actualizada", body: "Hola, {{1}}: se ha cambiado {{2}} de tu cuenta. Si no has sido tú, avísanos de inmediato.", params: ["María", "el correo electrónico"], buttons: ["Fui yo", "No fui yo"] },
      fr_FR: { header: "Compte mis à jour", body: "Bonjour {{1}}, une modification a été apportée à votre compte : {{2}}. Si ce n'était pas vous, prévenez-nous immédiatement.", params: ["Marie", "adresse e-mail"], buttons: ["C'était moi", "Ce n'était pas moi"] }
    }
  },
  {
    name: "appointment_reminder_1",
    category: "UTILITY",
    topic: "APPOINTMENT_REMINDERS",
    usecase: "APPOINTMENT_REMINDER",
    industry: ["HEALTHCARE"],
    paramTypes: ["TEXT", "TEXT", "DATE", "TEXT"],
    buttons: [{ type: "QUICK_REPLY" }, { type: "QUICK_REPLY" }],
    wordings: {
      en_US: { header: "Appointment reminder", body: "Hi {{1}}, this is a reminder of your appointment with {{2}} on {{3}} at {{4}}. Reply to confirm or reschedule.", params: ["Maria", "Dr. Silva", "March 14", "10:30 AM"], buttons: ["Confirm", "Reschedule"] },
      es_ES: { header: "Recordatorio de cita", body: "Hola, {{1}}: te recordamos tu cita con {{2}} el {{3}} a las {{4}}. Responde para confirmarla o cambiarla.", params: ["María", "la Dra. Silva", "14 de marzo", "10:30"], buttons: ["Confirmar", "Cambiar cita"] },
      fr_FR: { header: "Rappel de rendez-vous", body: "Bonjour {{1}}, nous vous rappelons votre rendez-vous avec {{2}} le {{3}} à {{4}}. Répondez pour le confirmer ou le déplacer.", params: ["Marie", "le Dr Silva", "14 mars", "10 h 30"], buttons: ["Confirmer", "Reprogrammer"] },
      it_IT: { header: "Promemoria appuntamento", body: "Ciao {{1}}, ti ricordiamo l'appuntamento con {{2}} il {{3}} alle {{4}}. Rispondi per confermarlo o spostarlo.", params: ["Maria", "la dott.ssa Silva", "14 marzo", "10:30"], buttons: ["Conferma", "Sposta"] }
    }
  },
  {
    name: "feedback_request_1",
    category: "UTILITY",
    topic: "CUSTOMER_FEEDBACK",
    usecase: "FEEDBACK_SURVEY",
    industry: ["E_COMMERCE", "TRAVEL", "HEALTHCARE"],
    paramTypes: ["TEXT", "TEXT"],
    buttons: [{ type: "URL", url: "https://www.example.com/{{1}}", url_suffix_example: "https://www.example.com/survey/abc123" }],
    wordings: {
      en_US: { body: "Hi {{1}}, how was your experience with {{2}}? Your feedback takes a minute and helps us improve.", params: ["Maria", "your recent order"], buttons: ["Leave feedback"] },
      es_ES: { body: "Hola, {{1}}: ¿qué tal tu experiencia con {{2}}? Tu opinión solo te llevará un minuto y nos ayuda a mejorar.", params: ["María", "tu pedido reciente"], buttons: ["Dar mi opinión"] },
      pt_BR: { body: "Olá, {{1}}! Como foi sua experiência com {{2}}? Sua opinião leva um minuto e nos ajuda a melhorar.", params: ["Maria", "seu pedido recente"], buttons: ["Avaliar"] }
    }
  },
  {
    name: "booking_confirmation_1",
    category: "UTILITY",
    topic: "ORDER_MANAGEMENT",
    usecase: "BOOKING_CONFIRMATION",
    industry: ["TRAVEL"],
    paramTypes: ["TEXT", "TEXT", "DATE"],
    buttons: [
      { type: "URL", url: "https://www.example.com/{{1}}", url_suffix_example: "https://www.example.com/bookings/ABC123" },
      { type: "PHONE_NUMBER", phone_number: CALL_US }
    ],
    wordings: {
      en_US: { header: "Booking confirmed", body: "Hi {{1}}, your booking {{2}} is confirmed for {{3}}. Have a great trip!", params: ["Maria", "ABC123", "March 14"], buttons: ["Manage booking", "Call us"] },
      es_ES: { header: "Reserva confirmada", body: "Hola, {{1}}: tu reserva {{2}} está confirmada para el {{3}}. ¡Buen viaje!", params: ["María", "ABC123", "14 de marzo"], buttons: ["Gestionar reserva", "Llámanos"] }
    }
  },
  {
    name: "verification_code_1",
    category: "AUTHENTICATION",
    topic: "SECURITY",
    usecase: "VERIFICATION_CODE",
    industry: ["E_COMMERCE", "FINANCIAL_SERVICES", "HEALTHCARE", "TRAVEL"],
    paramTypes: ["TEXT"],
    buttons: [{ type: "OTP", otp_type: "COPY_CODE" }],
    wordings: {
      en_US: { body: "{{1}} is your verification code. For your security, do not share this code.", footer: "This code expires in 10 minutes.", params: ["123456"], buttons: ["Copy code"] },
      es_ES: { body: "{{1}} es tu código de verificación. Por tu seguridad, no lo compartas.", footer: "Este código caduca en 10 minutos.", params: ["123456"], buttons: ["Copiar código"] },
      pt_BR: { body: "{{1}} é seu código de verificação. Para sua segurança, não o compartilhe.", footer: "Este código expira em 10 minutos.", params: ["123456"], buttons: ["Copiar código"] },
      de_DE: { body: "{{1}} ist dein Bestätigungscode. Gib diesen Code zu deiner Sicherheit nicht weiter.", footer: "Dieser Code läuft in 10 Minuten ab.", params: ["123456"], buttons: ["Code kopieren"] },
      fr_FR: { body: "{{1}} est votre code de vérification. Pour votre sécurité, ne le communiquez à personne.", footer: "Ce code expire dans 10 minutes.", params: ["123456"], buttons: ["Copier le code"] },
      it_IT: { body: "{{1}} è il tuo codice di verifica. Per la tua sicurezza, non condividerlo.", footer: "Questo codice scade tra 10 minuti.", params: ["123456"], buttons: ["Copia codice"] }
    }
  }
]

/** A library entry as the simulator keeps it: the operator's JSON, with the footer it ships. */
type LibraryEntry = ChatappLibraryTemplate & { readonly footer?: string }

/** Every (kind, language) pair, in catalog order, with stable operator-style ids. */
const LIBRARY: ReadonlyArray<LibraryEntry> = LIBRARY_KINDS.flatMap((kind) =>
  Object.entries(kind.wordings).map(([language, wording]) => ({ kind, language, wording }))
).map(({ kind, language, wording }, i): LibraryEntry => ({
  id: String(7_300_000_000_000_000 + i + 1),
  name: kind.name,
  language,
  category: kind.category,
  topic: kind.topic,
  usecase: kind.usecase,
  industry: kind.industry,
  ...(wording.header === undefined ? {} : { header: wording.header }),
  body: wording.body,
  ...(wording.footer === undefined ? {} : { footer: wording.footer }),
  body_params: wording.params,
  body_param_types: kind.paramTypes,
  buttons: kind.buttons.map((button, at) => ({ ...button, text: wording.buttons[at] ?? "" }))
}))

const sameWord = (a: string | undefined, b: string) => a !== undefined && a.toLowerCase() === b.toLowerCase()

/** The operator's filtering: `search` in name or body, any case; facets exact (enum facets in any case). */
const matches = (entry: LibraryEntry, query: LibraryQuery): boolean => {
  const search = query.search?.trim().toLowerCase()
  return (search === undefined || search === "" || entry.name.toLowerCase().includes(search) || entry.body.toLowerCase().includes(search)) &&
    (query.topic === undefined || sameWord(entry.topic, query.topic)) &&
    (query.usecase === undefined || sameWord(entry.usecase, query.usecase)) &&
    (query.industry === undefined || (entry.industry ?? []).some((industry) => sameWord(industry, query.industry!))) &&
    (query.language === undefined || entry.language === query.language) &&
    (query.name === undefined || entry.name === query.name)
}

// ---------------------------------------------------------------------------------------------
// Media: real files, so whatever checks the bytes checks something true.
// ---------------------------------------------------------------------------------------------

/** A 1×1 RGBA PNG, every chunk's CRC right. */
const PNG_1X1 = Uint8Array.from(Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64"
))

/** A one-page PDF saying "Simulated document", its cross-reference offsets computed. */
const ONE_PAGE_PDF = (() => {
  const content = "BT /F1 18 Tf 24 60 Td (Simulated document) Tj ET"
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 240 120] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
  ]
  let text = "%PDF-1.4\n"
  const offsets = objects.map((object, i) => {
    const offset = text.length
    text += `${i + 1} 0 obj\n${object}\nendobj\n`
    return offset
  })
  const xref = text.length
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const offset of offsets) text += `${String(offset).padStart(10, "0")} 00000 n \n`
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(text)
})()

/** The simulator's media: ids by prefix, as the operator's media ids are opaque to us. */
const SIMULATED_MEDIA: ReadonlyArray<{ readonly prefix: string; readonly bytes: Uint8Array; readonly mimeType: string }> = [
  { prefix: "sim-image", bytes: PNG_1X1, mimeType: "image/png" },
  { prefix: "sim-document", bytes: ONE_PAGE_PDF, mimeType: "application/pdf" }
]

// ---------------------------------------------------------------------------------------------
// The operator's refusals, in its own words.
// ---------------------------------------------------------------------------------------------

const refusal = (
  kind: ChatPlatformErrorKind,
  code: number,
  message: string,
  extra: { readonly subcode?: number; readonly userTitle?: string; readonly userMessage?: string; readonly httpStatus?: number } = {}
) =>
  new ChatPlatformError({
    kind,
    code,
    subcode: extra.subcode ?? null,
    message,
    userTitle: extra.userTitle ?? null,
    userMessage: extra.userMessage ?? null,
    fbtraceId: `Sim${randomBytes(8).toString("base64url")}`,
    httpStatus: extra.httpStatus ?? 400
  })

const invalidParameter = (userMessage: string, subcode?: number, userTitle?: string) =>
  refusal("other", 100, "(#100) Invalid parameter", {
    userMessage,
    ...(subcode === undefined ? {} : { subcode }),
    ...(userTitle === undefined ? {} : { userTitle })
  })

const DIGITS = /^\d{5,20}$/
const TOKEN = /^\S{20,}$/

/**
 * The operator's checks of the credentials, as far as they can be made without it: ids in digits, a
 * token of at least 20 characters, and, standing in for a token the operator has revoked (as the
 * simulated providers do), none containing `REJECT`. Each failure is the operator's code 190.
 */
const checkCredentials = (credentials: ChatappCredentials): Effect.Effect<void, ChatPlatformError> => {
  const invalid = (message: string, subcode?: number) =>
    Effect.fail(refusal("auth", 190, message, { httpStatus: 401, ...(subcode === undefined ? {} : { subcode }) }))
  if (!DIGITS.test(credentials.phoneNumberId)) return invalid("Invalid OAuth access token - the phone number ID must be digits")
  if (!DIGITS.test(credentials.businessAccountId)) return invalid("Invalid OAuth access token - the business account ID must be digits")
  if (!TOKEN.test(credentials.accessToken)) return invalid("Invalid OAuth access token - Cannot parse access token")
  if (credentials.accessToken.includes("REJECT")) {
    return invalid("Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.", 460)
  }
  return Effect.void
}

/** What the operator stores of a template created from a library entry, its button inputs applied. */
const componentsOf = (entry: LibraryEntry, buttonInputs: ReadonlyArray<Readonly<Record<string, unknown>>>) => {
  const used = new Set<number>()
  const buttons = (entry.buttons ?? []).map((button) => {
    const at = buttonInputs.findIndex((input, i) => !used.has(i) && input.type === button.type)
    if (at === -1) return button
    used.add(at)
    const input = buttonInputs[at]!
    const url = input.url as { readonly base_url?: unknown } | undefined
    return {
      ...button,
      ...(typeof url?.base_url === "string" ? { url: url.base_url } : {}),
      ...(typeof input.phone_number === "string" ? { phone_number: input.phone_number } : {})
    }
  })
  return [
    ...(entry.header === undefined ? [] : [{ type: "HEADER", format: "TEXT", text: entry.header }]),
    { type: "BODY", text: entry.body, example: { body_text: [entry.body_params ?? []] } },
    ...(entry.footer === undefined ? [] : [{ type: "FOOTER", text: entry.footer }]),
    ...(buttons.length === 0 ? [] : [{ type: "BUTTONS", buttons }])
  ]
}

/**
 * Whether `components`, when given, keep the library entry's wording: its header, body and footer,
 * each there exactly as shipped (one left out or added is a change). A renamed template and
 * re-pointed buttons still count as unchanged (the spec's rule).
 */
const wordingUnchanged = (components: unknown, entry: LibraryEntry): boolean => {
  if (components === undefined) return true
  if (!Array.isArray(components)) return false
  const textOf = (type: string): unknown => components.find((component) => component?.type === type)?.text
  return textOf("HEADER") === entry.header && textOf("BODY") === entry.body && textOf("FOOTER") === entry.footer
}

/** `library_template_button_inputs` as the operator takes it: a JSON-encoded array (an array is taken too). */
const buttonInputsOf = (value: unknown): ReadonlyArray<Readonly<Record<string, unknown>>> | undefined => {
  let parsed = value
  if (typeof value === "string") {
    try {
      parsed = JSON.parse(value)
    } catch {
      return undefined
    }
  }
  return Array.isArray(parsed) && parsed.every((item) => typeof item === "object" && item !== null) ? parsed : undefined
}

/** A template as stored, before its id. */
interface TemplateFields {
  readonly name: string
  readonly language: string
  readonly status: string
  readonly category: string
  readonly components: ChatappTemplate["components"]
  readonly library_template_name?: string
}

const TEMPLATE_NAME = /^[a-z0-9_]{1,512}$/
const CATEGORIES = new Set(["UTILITY", "MARKETING", "AUTHENTICATION"])
const cursorOf = (offset: number) => Buffer.from(`offset:${offset}`).toString("base64url")
const offsetOf = (cursor: string): number | undefined => {
  const match = /^offset:(\d+)$/.exec(Buffer.from(cursor, "base64url").toString("utf8"))
  return match === null ? undefined : Number(match[1])
}

/**
 * The operator played in process, for `npm start` and tests without an account: the library above
 * (filtered as the operator filters), templates kept per business account (an unchanged library
 * template is `APPROVED` at once, anything else stays `PENDING`), a `TIER_1K`/`GREEN`/`CONNECTED`
 * number, sends that always succeed, and media for ids starting `sim-image` (a PNG) or
 * `sim-document` (a PDF). `now` stamps the template ids.
 */
export const makeSimulatedChatPlatform = (options: { readonly now?: () => number } = {}): ChatPlatform["Service"] => {
  const now = options.now ?? Date.now
  const templates = new Map<string, Array<ChatappTemplate>>()
  let created = 0

  return ChatPlatform.of({
    name: "simulator",

    sendMessage: Effect.fnUntraced(function*(credentials, to, _message) {
      yield* checkCredentials(credentials)
      const waId = to.replace(/\D/g, "")
      if (waId.length < 5) return yield* invalidParameter(`The recipient "${to}" is not a phone number.`)
      return { messageId: `wamid.${randomBytes(24).toString("base64url")}`, recipientWaId: waId }
    }),

    listTemplates: Effect.fnUntraced(function*(credentials, page) {
      yield* checkCredentials(credentials)
      const all = templates.get(credentials.businessAccountId) ?? []
      const start = page.after === undefined ? 0 : offsetOf(page.after)
      if (start === undefined) return yield* invalidParameter("The paging cursor is not valid.")
      const end = start + Math.max(1, Math.floor(page.limit))
      return { items: all.slice(start, end), after: end < all.length ? cursorOf(end) : null }
    }),

    createTemplate: Effect.fnUntraced(function*(credentials, body) {
      yield* checkCredentials(credentials)
      const { name, language, category, components } = body
      if (typeof name !== "string" || !TEMPLATE_NAME.test(name)) {
        return yield* invalidParameter("Template names may contain only lowercase letters, numbers and underscores.")
      }
      if (typeof language !== "string") return yield* invalidParameter("A template needs a language.")
      const account = templates.get(credentials.businessAccountId) ?? []
      if (account.some((template) => template.name === name && template.language === language)) {
        return yield* invalidParameter(
          `There is already ${language} content for this template. You can create a new template and try again.`,
          2388024,
          "Content in This Language Already Exists"
        )
      }

      let template: TemplateFields
      if (body.library_template_name !== undefined) {
        const entry = LIBRARY.find((candidate) => candidate.name === body.library_template_name && candidate.language === language)
        if (entry === undefined) {
          return yield* invalidParameter(`The template library has no "${String(body.library_template_name)}" in ${language}.`)
        }
        const buttonInputs = body.library_template_button_inputs === undefined ? [] : buttonInputsOf(body.library_template_button_inputs)
        if (buttonInputs === undefined) return yield* invalidParameter("library_template_button_inputs is not a JSON array.")
        const unchanged = wordingUnchanged(components, entry)
        template = {
          name,
          language,
          status: unchanged ? "APPROVED" : "PENDING",
          category: unchanged || typeof category !== "string" ? entry.category : category,
          components: unchanged ? componentsOf(entry, buttonInputs) : components as ChatappTemplate["components"],
          library_template_name: entry.name
        }
      } else {
        if (typeof category !== "string" || !CATEGORIES.has(category)) {
          return yield* invalidParameter("The category must be UTILITY, MARKETING or AUTHENTICATION.")
        }
        if (!Array.isArray(components) || !components.some((c) => c?.type === "BODY")) {
          return yield* invalidParameter("A template needs a BODY component.")
        }
        template = { name, language, status: "PENDING", category, components }
      }
      created += 1
      const stored: ChatappTemplate = { id: `${now()}${String(created).padStart(3, "0")}`, ...template }
      templates.set(credentials.businessAccountId, [...account, stored])
      return { id: stored.id, status: stored.status, category: stored.category }
    }),

    browseLibrary: Effect.fnUntraced(function*(credentials, query) {
      yield* checkCredentials(credentials)
      return LIBRARY.filter((entry) => matches(entry, query))
    }),

    phoneNumber: Effect.fnUntraced(function*(credentials) {
      yield* checkCredentials(credentials)
      const last = credentials.phoneNumberId.slice(-7).padStart(7, "0")
      return {
        id: credentials.phoneNumberId,
        displayPhoneNumber: `+1 555-${last.slice(0, 3)}-${last.slice(3)}`,
        verifiedName: "Simulated Business",
        messagingLimitTier: "TIER_1K",
        qualityRating: "GREEN",
        status: "CONNECTED"
      }
    }),

    fetchMedia: Effect.fnUntraced(function*(credentials, mediaId, { maxBytes }) {
      yield* checkCredentials(credentials)
      const media = SIMULATED_MEDIA.find(({ prefix }) => mediaId.startsWith(prefix))
      if (media === undefined) {
        return yield* refusal(
          "other",
          100,
          `Unsupported get request. Object with ID '${mediaId}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
          { subcode: 33 }
        )
      }
      if (media.bytes.length > maxBytes) {
        return yield* new ChatPlatformError({
          kind: "other",
          code: null,
          subcode: null,
          message: `media ${mediaId} is ${media.bytes.length} bytes, more than the ${maxBytes} allowed`,
          userTitle: null,
          userMessage: null,
          fbtraceId: null,
          httpStatus: null
        })
      }
      return {
        bytes: media.bytes.slice(),
        mimeType: media.mimeType,
        sha256: createHash("sha256").update(media.bytes).digest("hex")
      }
    })
  })
}
