import type { ChatappLibraryTemplate, LibraryQuery } from "../../src/ports/ChatPlatform.ts"

// The simulator's template library: a few of the operator's kinds of entries, each in several languages.

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
export type LibraryEntry = ChatappLibraryTemplate & { readonly footer?: string }

/** Every (kind, language) pair, in catalog order, with stable operator-style ids. */
export const LIBRARY: ReadonlyArray<LibraryEntry> = LIBRARY_KINDS.flatMap((kind) =>
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
export const matches = (entry: LibraryEntry, query: LibraryQuery): boolean => {
  const search = query.search?.trim().toLowerCase()
  return (search === undefined || search === "" || entry.name.toLowerCase().includes(search) || entry.body.toLowerCase().includes(search)) &&
    (query.topic === undefined || sameWord(entry.topic, query.topic)) &&
    (query.usecase === undefined || sameWord(entry.usecase, query.usecase)) &&
    (query.industry === undefined || (entry.industry ?? []).some((industry) => sameWord(industry, query.industry!))) &&
    (query.language === undefined || entry.language === query.language) &&
    (query.name === undefined || entry.name === query.name)
}
