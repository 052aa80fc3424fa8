// A large template library in the operator's wire shape (`GET /message_template_library` entries),
// for tests and benchmarks that need more than the few entries of `FAKE_LIBRARY`: kinds of entries
// (a topic, a use case, a category, buttons) in several numbered variants, each variant in several of
// eight languages, with the placeholders, example values and button destinations the operator ships.

import { mulberry32 } from "./Mulberry32.ts"

const LANGUAGES = ["en_US", "es_ES", "pt_BR", "de_DE", "fr_FR", "it_IT", "id_ID", "hi_IN"] as const
type Language = typeof LANGUAGES[number]

const INDUSTRIES = [
  "E_COMMERCE",
  "FINANCIAL_SERVICES",
  "HEALTHCARE",
  "TRAVEL",
  "EDUCATION",
  "TELECOMMUNICATIONS",
  "UTILITIES",
  "PUBLIC_SERVICES"
] as const

type ButtonKind = "URL" | "PHONE_NUMBER" | "QUICK_REPLY" | "OTP"
/** Button texts by language: view, track, pay, call, confirm, reschedule, yes, no, feedback, copy code. */
type ButtonWord = "view" | "track" | "pay" | "call" | "confirm" | "reschedule" | "yes" | "no" | "feedback" | "copy"

interface Kind {
  readonly key: string
  readonly category: "UTILITY" | "AUTHENTICATION"
  readonly topic: string
  readonly usecase: string
  /** Industries the kind's variants draw their one or two from. */
  readonly industries: ReadonlyArray<typeof INDUSTRIES[number]>
  readonly paramTypes: ReadonlyArray<string>
  /** Example values, index-aligned with the body's placeholders. */
  readonly params: ReadonlyArray<string>
  /** Button sets a variant picks one of (each button's text word and type). */
  readonly buttonSets: ReadonlyArray<ReadonlyArray<readonly [ButtonKind, ButtonWord]>>
}

const KINDS: ReadonlyArray<Kind> = [
  {
    key: "order_confirmation", category: "UTILITY", topic: "ORDER_MANAGEMENT", usecase: "ORDER_CONFIRMATION",
    industries: ["E_COMMERCE", "TRAVEL", "TELECOMMUNICATIONS"], paramTypes: ["TEXT", "TEXT"], params: ["Maria", "#12345"],
    buttonSets: [[["URL", "view"]], [["URL", "view"], ["PHONE_NUMBER", "call"]], []]
  },
  {
    key: "order_delay", category: "UTILITY", topic: "ORDER_MANAGEMENT", usecase: "ORDER_DELAY",
    industries: ["E_COMMERCE", "UTILITIES"], paramTypes: ["TEXT", "TEXT", "DATE"], params: ["Maria", "#12345", "March 14"],
    buttonSets: [[["URL", "track"]], [["PHONE_NUMBER", "call"]]]
  },
  {
    key: "shipping_update", category: "UTILITY", topic: "SHIPPING_UPDATES", usecase: "SHIPMENT_CONFIRMATION",
    industries: ["E_COMMERCE"], paramTypes: ["TEXT", "DATE"], params: ["#12345", "Friday, March 14"],
    buttonSets: [[["URL", "track"]], []]
  },
  {
    key: "delivery_update", category: "UTILITY", topic: "SHIPPING_UPDATES", usecase: "DELIVERY_UPDATE",
    industries: ["E_COMMERCE", "UTILITIES", "PUBLIC_SERVICES"], paramTypes: ["TEXT", "TEXT"], params: ["#12345", "10:00–12:00"],
    buttonSets: [[["URL", "track"], ["QUICK_REPLY", "reschedule"]], [["QUICK_REPLY", "confirm"], ["QUICK_REPLY", "reschedule"]]]
  },
  {
    key: "payment_reminder", category: "UTILITY", topic: "PAYMENTS", usecase: "PAYMENT_DUE_REMINDER",
    industries: ["FINANCIAL_SERVICES", "UTILITIES", "TELECOMMUNICATIONS", "EDUCATION"], paramTypes: ["TEXT", "AMOUNT", "DATE"],
    params: ["Maria", "$45.00", "March 14"],
    buttonSets: [[["URL", "pay"]], [["URL", "pay"], ["PHONE_NUMBER", "call"]]]
  },
  {
    key: "payment_received", category: "UTILITY", topic: "PAYMENTS", usecase: "RECEIPT",
    industries: ["FINANCIAL_SERVICES", "E_COMMERCE", "UTILITIES", "EDUCATION"], paramTypes: ["AMOUNT", "TEXT"],
    params: ["$45.00", "INV-1001"], buttonSets: [[], [["URL", "view"]]]
  },
  {
    key: "account_update", category: "UTILITY", topic: "ACCOUNT_UPDATES", usecase: "ACCOUNT_DETAILS_CHANGED",
    industries: ["FINANCIAL_SERVICES", "E_COMMERCE", "TELECOMMUNICATIONS", "PUBLIC_SERVICES"], paramTypes: ["TEXT", "TEXT"],
    params: ["Maria", "email address"], buttonSets: [[["QUICK_REPLY", "yes"], ["QUICK_REPLY", "no"]], [["PHONE_NUMBER", "call"]]]
  },
  {
    key: "appointment_reminder", category: "UTILITY", topic: "APPOINTMENT_REMINDERS", usecase: "APPOINTMENT_REMINDER",
    industries: ["HEALTHCARE", "EDUCATION", "PUBLIC_SERVICES"], paramTypes: ["TEXT", "TEXT", "DATE", "TEXT"],
    params: ["Maria", "Dr. Silva", "March 14", "10:30"],
    buttonSets: [[["QUICK_REPLY", "confirm"], ["QUICK_REPLY", "reschedule"]], [["URL", "reschedule"], ["PHONE_NUMBER", "call"]]]
  },
  {
    key: "feedback_request", category: "UTILITY", topic: "CUSTOMER_FEEDBACK", usecase: "FEEDBACK_SURVEY",
    industries: ["E_COMMERCE", "TRAVEL", "HEALTHCARE", "EDUCATION"], paramTypes: ["TEXT", "TEXT"], params: ["Maria", "your recent order"],
    buttonSets: [[["URL", "feedback"]], [["QUICK_REPLY", "yes"], ["QUICK_REPLY", "no"]]]
  },
  {
    key: "verification_code", category: "AUTHENTICATION", topic: "SECURITY", usecase: "VERIFICATION_CODE",
    industries: ["FINANCIAL_SERVICES", "E_COMMERCE", "HEALTHCARE", "TRAVEL", "TELECOMMUNICATIONS"], paramTypes: ["TEXT"],
    params: ["123456"], buttonSets: [[["OTP", "copy"]]]
  }
]

/** Each kind's header (empty: the kind has none) and body, by language, in `KINDS` order. */
const WORDS: Record<Language, ReadonlyArray<readonly [string, string]>> = {
  en_US: [
    ["Order confirmed", "Hi {{1}}, thank you for your order {{2}}. We'll let you know as soon as it ships."],
    ["Your order is delayed", "Hi {{1}}, your order {{2}} is running late. It should now arrive by {{3}}."],
    ["Your order is on its way", "Good news: your order {{1}} has shipped and should arrive by {{2}}."],
    ["Delivery today", "Your order {{1}} will be delivered today between {{2}}."],
    ["Payment reminder", "Hi {{1}}, this is a reminder that your payment of {{2}} is due on {{3}}."],
    ["", "We received your payment of {{1}} for invoice {{2}}. Thank you!"],
    ["Account updated", "Hi {{1}}, the {{2}} on your account was changed. If this wasn't you, let us know right away."],
    ["Appointment reminder", "Hi {{1}}, this is a reminder of your appointment with {{2}} on {{3}} at {{4}}."],
    ["", "Hi {{1}}, how was your experience with {{2}}? Your feedback takes a minute and helps us improve."],
    ["", "{{1}} is your verification code. For your security, do not share this code."]
  ],
  es_ES: [
    ["Pedido confirmado", "Hola, {{1}}: gracias por tu pedido {{2}}. Te avisaremos en cuanto se envíe."],
    ["Tu pedido se retrasa", "Hola, {{1}}: tu pedido {{2}} lleva retraso. Debería llegar antes del {{3}}."],
    ["Tu pedido está en camino", "Buenas noticias: tu pedido {{1}} se ha enviado y debería llegar el {{2}}."],
    ["Entrega hoy", "Tu pedido {{1}} se entregará hoy entre las {{2}}."],
    ["Recordatorio de pago", "Hola, {{1}}: te recordamos que tu pago de {{2}} vence el {{3}}."],
    ["", "Hemos recibido tu pago de {{1}} de la factura {{2}}. ¡Gracias!"],
    ["Cuenta actualizada", "Hola, {{1}}: se ha cambiado {{2}} de tu cuenta. Si no has sido tú, avísanos de inmediato."],
    ["Recordatorio de cita", "Hola, {{1}}: te recordamos tu cita con {{2}} el {{3}} a las {{4}}."],
    ["", "Hola, {{1}}: ¿qué tal tu experiencia con {{2}}? Tu opinión nos ayuda a mejorar."],
    ["", "{{1}} es tu código de verificación. Por tu seguridad, no lo compartas."]
  ],
  pt_BR: [
    ["Pedido confirmado", "Olá, {{1}}! Obrigado pelo seu pedido {{2}}. Avisaremos assim que ele for enviado."],
    ["Seu pedido atrasou", "Olá, {{1}}! Seu pedido {{2}} está atrasado e deve chegar até {{3}}."],
    ["Seu pedido está a caminho", "Boa notícia: seu pedido {{1}} foi enviado e deve chegar até {{2}}."],
    ["Entrega hoje", "Seu pedido {{1}} será entregue hoje entre {{2}}."],
    ["Lembrete de pagamento", "Olá, {{1}}! Lembramos que seu pagamento de {{2}} vence em {{3}}."],
    ["", "Recebemos seu pagamento de {{1}} referente à fatura {{2}}. Obrigado!"],
    ["Conta atualizada", "Olá, {{1}}! O campo {{2}} da sua conta foi alterado. Se não foi você, avise-nos agora."],
    ["Lembrete de consulta", "Olá, {{1}}! Lembramos sua consulta com {{2}} em {{3}} às {{4}}."],
    ["", "Olá, {{1}}! Como foi sua experiência com {{2}}? Sua opinião nos ajuda a melhorar."],
    ["", "{{1}} é seu código de verificação. Para sua segurança, não o compartilhe."]
  ],
  de_DE: [
    ["Bestellung bestätigt", "Hallo {{1}}, vielen Dank für deine Bestellung {{2}}. Wir melden uns, sobald sie versandt wurde."],
    ["Deine Bestellung verzögert sich", "Hallo {{1}}, deine Bestellung {{2}} verspätet sich. Sie sollte bis {{3}} ankommen."],
    ["Deine Bestellung ist unterwegs", "Gute Nachricht: Deine Bestellung {{1}} wurde versandt und sollte bis {{2}} ankommen."],
    ["Lieferung heute", "Deine Bestellung {{1}} wird heute zwischen {{2}} geliefert."],
    ["Zahlungserinnerung", "Hallo {{1}}, wir erinnern dich an deine Zahlung über {{2}}, fällig am {{3}}."],
    ["", "Wir haben deine Zahlung über {{1}} für die Rechnung {{2}} erhalten. Vielen Dank!"],
    ["Konto aktualisiert", "Hallo {{1}}, {{2}} in deinem Konto wurde geändert. Warst du das nicht, melde dich bitte sofort."],
    ["Terminerinnerung", "Hallo {{1}}, wir erinnern dich an deinen Termin bei {{2}} am {{3}} um {{4}}."],
    ["", "Hallo {{1}}, wie war deine Erfahrung mit {{2}}? Dein Feedback hilft uns, besser zu werden."],
    ["", "{{1}} ist dein Bestätigungscode. Gib diesen Code zu deiner Sicherheit nicht weiter."]
  ],
  fr_FR: [
    ["Commande confirmée", "Bonjour {{1}}, merci pour votre commande {{2}}. Nous vous préviendrons dès son expédition."],
    ["Votre commande est retardée", "Bonjour {{1}}, votre commande {{2}} a du retard. Elle devrait arriver d'ici le {{3}}."],
    ["Votre commande est en route", "Bonne nouvelle : votre commande {{1}} a été expédiée et devrait arriver d'ici le {{2}}."],
    ["Livraison aujourd'hui", "Votre commande {{1}} sera livrée aujourd'hui entre {{2}}."],
    ["Rappel de paiement", "Bonjour {{1}}, nous vous rappelons que votre paiement de {{2}} est dû le {{3}}."],
    ["", "Nous avons bien reçu votre paiement de {{1}} pour la facture {{2}}. Merci !"],
    ["Compte mis à jour", "Bonjour {{1}}, votre {{2}} a été modifié. Si ce n'était pas vous, prévenez-nous immédiatement."],
    ["Rappel de rendez-vous", "Bonjour {{1}}, nous vous rappelons votre rendez-vous avec {{2}} le {{3}} à {{4}}."],
    ["", "Bonjour {{1}}, comment s'est passée votre expérience avec {{2}} ? Votre avis nous aide à progresser."],
    ["", "{{1}} est votre code de vérification. Pour votre sécurité, ne le communiquez à personne."]
  ],
  it_IT: [
    ["Ordine confermato", "Ciao {{1}}, grazie per il tuo ordine {{2}}. Ti avviseremo non appena verrà spedito."],
    ["Il tuo ordine è in ritardo", "Ciao {{1}}, il tuo ordine {{2}} è in ritardo. Dovrebbe arrivare entro il {{3}}."],
    ["Il tuo ordine è in viaggio", "Buone notizie: il tuo ordine {{1}} è stato spedito e dovrebbe arrivare entro {{2}}."],
    ["Consegna oggi", "Il tuo ordine {{1}} sarà consegnato oggi tra le {{2}}."],
    ["Promemoria di pagamento", "Ciao {{1}}, ti ricordiamo che il pagamento di {{2}} scade il {{3}}."],
    ["", "Abbiamo ricevuto il tuo pagamento di {{1}} per la fattura {{2}}. Grazie!"],
    ["Account aggiornato", "Ciao {{1}}, il campo {{2}} del tuo account è stato modificato. Se non sei stato tu, avvisaci subito."],
    ["Promemoria appuntamento", "Ciao {{1}}, ti ricordiamo l'appuntamento con {{2}} il {{3}} alle {{4}}."],
    ["", "Ciao {{1}}, com'è andata la tua esperienza con {{2}}? La tua opinione ci aiuta a migliorare."],
    ["", "{{1}} è il tuo codice di verifica. Per la tua sicurezza, non condividerlo."]
  ],
  id_ID: [
    ["Pesanan dikonfirmasi", "Hai {{1}}, terima kasih atas pesanan {{2}}. Kami akan mengabari Anda saat pesanan dikirim."],
    ["Pesanan Anda tertunda", "Hai {{1}}, pesanan {{2}} mengalami keterlambatan dan akan tiba paling lambat {{3}}."],
    ["Pesanan Anda dalam perjalanan", "Kabar baik: pesanan {{1}} sudah dikirim dan akan tiba paling lambat {{2}}."],
    ["Pengiriman hari ini", "Pesanan {{1}} akan diantar hari ini antara pukul {{2}}."],
    ["Pengingat pembayaran", "Hai {{1}}, ini pengingat bahwa pembayaran sebesar {{2}} jatuh tempo pada {{3}}."],
    ["", "Kami telah menerima pembayaran {{1}} untuk tagihan {{2}}. Terima kasih!"],
    ["Akun diperbarui", "Hai {{1}}, {{2}} pada akun Anda telah diubah. Jika bukan Anda, segera hubungi kami."],
    ["Pengingat janji temu", "Hai {{1}}, ini pengingat janji temu Anda dengan {{2}} pada {{3}} pukul {{4}}."],
    ["", "Hai {{1}}, bagaimana pengalaman Anda dengan {{2}}? Masukan Anda membantu kami menjadi lebih baik."],
    ["", "{{1}} adalah kode verifikasi Anda. Demi keamanan, jangan bagikan kode ini."]
  ],
  hi_IN: [
    ["ऑर्डर की पुष्टि हुई", "नमस्ते {{1}}, आपके ऑर्डर {{2}} के लिए धन्यवाद। भेजे जाते ही हम आपको बताएँगे।"],
    ["आपके ऑर्डर में देरी", "नमस्ते {{1}}, आपके ऑर्डर {{2}} में देरी है। यह {{3}} तक पहुँच जाना चाहिए।"],
    ["आपका ऑर्डर रास्ते में है", "खुशखबरी: आपका ऑर्डर {{1}} भेज दिया गया है और {{2}} तक पहुँच जाना चाहिए।"],
    ["आज डिलीवरी", "आपका ऑर्डर {{1}} आज {{2}} के बीच डिलीवर होगा।"],
    ["भुगतान अनुस्मारक", "नमस्ते {{1}}, याद दिला दें कि {{2}} का आपका भुगतान {{3}} को देय है।"],
    ["", "हमें बिल {{2}} के लिए आपका {{1}} का भुगतान मिल गया है। धन्यवाद!"],
    ["खाता अपडेट हुआ", "नमस्ते {{1}}, आपके खाते में {{2}} बदला गया है। अगर यह आपने नहीं किया, तो तुरंत बताएँ।"],
    ["अपॉइंटमेंट अनुस्मारक", "नमस्ते {{1}}, {{3}} को {{4}} बजे {{2}} के साथ आपकी अपॉइंटमेंट है।"],
    ["", "नमस्ते {{1}}, {{2}} के साथ आपका अनुभव कैसा रहा? आपकी राय हमें बेहतर बनाती है।"],
    ["", "{{1}} आपका सत्यापन कोड है। अपनी सुरक्षा के लिए यह कोड किसी से साझा न करें।"]
  ]
}

const BUTTON_WORDS: Record<Language, Record<ButtonWord, string>> = {
  en_US: { view: "View details", track: "Track package", pay: "Pay now", call: "Call us", confirm: "Confirm", reschedule: "Reschedule", yes: "Yes", no: "No", feedback: "Leave feedback", copy: "Copy code" },
  es_ES: { view: "Ver detalles", track: "Seguir envío", pay: "Pagar ahora", call: "Llámanos", confirm: "Confirmar", reschedule: "Cambiar fecha", yes: "Sí", no: "No", feedback: "Dar mi opinión", copy: "Copiar código" },
  pt_BR: { view: "Ver detalhes", track: "Rastrear pacote", pay: "Pagar agora", call: "Ligue para nós", confirm: "Confirmar", reschedule: "Remarcar", yes: "Sim", no: "Não", feedback: "Avaliar", copy: "Copiar código" },
  de_DE: { view: "Details ansehen", track: "Sendung verfolgen", pay: "Jetzt bezahlen", call: "Anrufen", confirm: "Bestätigen", reschedule: "Verschieben", yes: "Ja", no: "Nein", feedback: "Feedback geben", copy: "Code kopieren" },
  fr_FR: { view: "Voir le détail", track: "Suivre le colis", pay: "Payer", call: "Nous appeler", confirm: "Confirmer", reschedule: "Reprogrammer", yes: "Oui", no: "Non", feedback: "Donner mon avis", copy: "Copier le code" },
  it_IT: { view: "Vedi dettagli", track: "Traccia pacco", pay: "Paga ora", call: "Chiamaci", confirm: "Conferma", reschedule: "Sposta", yes: "Sì", no: "No", feedback: "Lascia un parere", copy: "Copia codice" },
  id_ID: { view: "Lihat detail", track: "Lacak paket", pay: "Bayar sekarang", call: "Hubungi kami", confirm: "Konfirmasi", reschedule: "Jadwal ulang", yes: "Ya", no: "Tidak", feedback: "Beri masukan", copy: "Salin kode" },
  hi_IN: { view: "विवरण देखें", track: "पैकेज ट्रैक करें", pay: "अभी भुगतान करें", call: "हमें कॉल करें", confirm: "पुष्टि करें", reschedule: "समय बदलें", yes: "हाँ", no: "नहीं", feedback: "राय दें", copy: "कोड कॉपी करें" }
}

/** Footers a variant may carry, by language (utility, authentication). */
const FOOTERS: Record<Language, readonly [string, string]> = {
  en_US: ["This is an automated message.", "This code expires in 10 minutes."],
  es_ES: ["Este es un mensaje automático.", "Este código caduca en 10 minutos."],
  pt_BR: ["Esta é uma mensagem automática.", "Este código expira em 10 minutos."],
  de_DE: ["Dies ist eine automatische Nachricht.", "Dieser Code läuft in 10 Minuten ab."],
  fr_FR: ["Ceci est un message automatique.", "Ce code expire dans 10 minutes."],
  it_IT: ["Questo è un messaggio automatico.", "Questo codice scade tra 10 minuti."],
  id_ID: ["Ini adalah pesan otomatis.", "Kode ini berlaku selama 10 menit."],
  hi_IN: ["यह एक स्वचालित संदेश है।", "यह कोड 10 मिनट में समाप्त हो जाएगा।"]
}

const CALL_US = "+15555550100"
const OTP_TYPES = ["COPY_CODE", "ONE_TAP", "ZERO_TAP"] as const

/**
 * `size` library entries as the operator returns them, the same ones for the same `seed`. Kinds come
 * round in turn, each new variant named `{kind}_{n}` and published in one to eight languages (a name is
 * unique per language); a variant has one or two industries, a header when its kind has one (three in
 * four times), a footer one time in three (authentication always), its button set, and entry ids
 * that are numeric strings in catalog order.
 */
export const makeLibraryCatalog = (size: number, seed = 1): Array<Record<string, unknown>> => {
  const random = mulberry32(seed)
  const pick = <A>(items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!
  const variants = new Map<string, number>()
  const entries: Array<Record<string, unknown>> = []
  for (let k = 0; entries.length < size; k++) {
    const kindIndex = k % KINDS.length
    const kind = KINDS[kindIndex]!
    const variant = (variants.get(kind.key) ?? 0) + 1
    variants.set(kind.key, variant)
    const name = `${kind.key}_${variant}`
    const first = pick(kind.industries)
    const second = random() < 0.4 ? pick(kind.industries) : first
    const industry = first === second ? [first] : [first, second]
    const withHeader = random() < 0.75
    const withFooter = kind.category === "AUTHENTICATION" || random() < 1 / 3
    const buttonSet = pick(kind.buttonSets)
    const otpType = pick(OTP_TYPES)
    // English nearly always; each other language about half the time.
    const languages = LANGUAGES.filter((language) => language === "en_US" ? random() < 0.95 : random() < 0.55)
    if (languages.length === 0) languages.push(pick(LANGUAGES))
    for (const language of languages) {
      if (entries.length >= size) break
      const [header, body] = WORDS[language][kindIndex]!
      const footer = FOOTERS[language][kind.category === "AUTHENTICATION" ? 1 : 0]
      entries.push({
        name,
        language,
        category: kind.category,
        topic: kind.topic,
        usecase: kind.usecase,
        industry,
        ...(withHeader && header !== "" ? { header } : {}),
        body,
        ...(withFooter ? { footer } : {}),
        body_params: kind.params,
        body_param_types: kind.paramTypes,
        buttons: buttonSet.map(([type, word]) => {
          const text = BUTTON_WORDS[language][word]
          switch (type) {
            case "URL":
              return { type, text, url: "https://www.example.com/{{1}}" }
            case "PHONE_NUMBER":
              return { type, text, phone_number: CALL_US }
            case "OTP":
              return { type, text, otp_type: otpType }
            case "QUICK_REPLY":
              return { type, text }
          }
        }),
        id: `72${String(seed % 1000).padStart(3, "0")}${String(entries.length + 1).padStart(11, "0")}`
      })
    }
  }
  return entries
}
