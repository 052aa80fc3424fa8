import { html } from "@remix-run/html-template"
import { Effect, Result } from "effect"
import { CHANNEL_TYPE_LABELS, type ChannelType } from "../kernel/ChannelType.ts"
import { page, pageHeaders } from "../http/Html.ts"
import { readLimited } from "../http/RequestBody.ts"
import { observeRequest } from "../http/RequestTelemetry.ts"
import { constantTimeEqual, randomToken } from "../kernel/Secret.ts"
import type { ChannelProvider } from "../ports/ChannelProviders.ts"
import { ConnectLinks } from "./ConnectLinks.ts"
import { ConnectTokenService, type LinkUnusable, type OpenLink } from "./ConnectTokenService.ts"

const CSRF_COOKIE = "omni_connect_csrf"
// A connect form is a handful of short fields; counted in bytes as they arrive, never buffered past it.
const MAX_FORM_BYTES = 64 * 1024

const respond = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { ...pageHeaders(), ...headers } })

// The form's answer may redirect to the partner: the page's CSP must allow that origin.
const respondForm = (link: OpenLink, status: number, body: string, headers: Record<string, string> = {}) => {
  const redirect = link.token.partner_redirect_url
  return new Response(body, {
    status,
    headers: { ...pageHeaders(redirect === null ? [] : [new URL(redirect).origin]), ...headers }
  })
}

const labelOf = (type: string) => CHANNEL_TYPE_LABELS[type as ChannelType] ?? type

const UNUSABLE: Readonly<Record<LinkUnusable["reason"], { readonly status: number; readonly text: string }>> = {
  unknown: { status: 404, text: "This link is not valid. Check that you copied it whole, or ask for a new one." },
  revoked: { status: 410, text: "This link has been revoked. Ask whoever sent it for a new one." },
  expired: { status: 410, text: "This link has expired. Ask whoever sent it for a new one." },
  exhausted: { status: 410, text: "This link has been used as many times as it allows. Ask for a new one." }
}

const unusablePage = (reason: LinkUnusable["reason"]) =>
  respond(UNUSABLE[reason].status, page("Link unavailable", html`<h1>Link unavailable</h1><p>${UNUSABLE[reason].text}</p>`))

const cookieOf = (request: Request, name: string): string | undefined => {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const [key, ...rest] = part.trim().split("=")
    if (key === name) return rest.join("=")
  }
  return undefined
}

const choicePage = (link: OpenLink, action: string) => {
  const choices = link.providers.map(({ type }) =>
    html`<p><a class="choice" href="${`${action}?type=${encodeURIComponent(type)}`}">${labelOf(type)}</a></p>\n`
  )
  return page(
    `Connect a channel for ${link.token.partner_name}`,
    html`<h1>Connect a channel for ${link.token.partner_name}</h1>
<p>Choose the kind of channel to connect.</p>
${choices.length > 0 ? choices : html`<p>None of the channel types this link offers can be connected here.</p>`}`
  )
}

const formPage = (input: {
  readonly link: OpenLink
  readonly type: string
  readonly provider: ChannelProvider
  readonly action: string
  readonly csrf: string
  readonly values: Readonly<Record<string, string>>
  readonly errors: Readonly<Record<string, string>>
  readonly message?: string
}) => {
  const fields = input.provider.fields.map((field) => {
    const error = input.errors[field.name]
    const value = field.secret ? "" : input.values[field.name] ?? ""
    return html`<label for="f-${field.name}">${field.label}</label>
<input id="f-${field.name}" name="${field.name}" type="${field.secret ? "password" : "text"}"${
      field.required ? html` required` : null
    } autocomplete="off" value="${value}">
${field.hint === undefined ? null : html`<small>${field.hint}</small>`}
${error === undefined ? null : html`<p class="error" role="alert">${error}</p>`}
`
  })
  return page(
    `Connect ${labelOf(input.type)}`,
    html`<h1>Connect ${labelOf(input.type)} for ${input.link.token.partner_name}</h1>
${input.message === undefined ? null : html`<p class="error" role="alert">${input.message}</p>`}
<form method="post" action="${input.action}">
<input type="hidden" name="csrf" value="${input.csrf}">
<input type="hidden" name="channel_type" value="${input.type}">
${fields}
<p><button type="submit">Connect</button></p>
</form>`
  )
}

/**
 * The connect page a `connect_url` opens: it shows `partner_name` and the allowed channel types,
 * asks for what the chosen provider needs, and connects. Forms carry a double-submit CSRF token
 * and must come from this origin; every page is escaped and sends no referrer.
 */
export const makeConnectPageHandler = Effect.gen(function*() {
  const context = yield* Effect.context<ConnectTokenService | ConnectLinks>()
  const service = yield* ConnectTokenService
  const links = yield* ConnectLinks
  const prefix = links.path.replace(/\/+$/, "")

  const secureCookie = () => links.publicUrl().startsWith("https:")
  const freshCsrf = (request: Request) =>
    Effect.map(randomToken(32), (fresh) => cookieOf(request, CSRF_COOKIE) ?? fresh)
  const csrfCookie = (value: string) =>
    `${CSRF_COOKIE}=${value}; Path=${prefix}; HttpOnly; SameSite=Strict${secureCookie() ? "; Secure" : ""}`

  const show = (request: Request, rawToken: string, action: string, type: string | null) =>
    Effect.gen(function*() {
      const link = yield* service.open(rawToken)
      const chosen = type ?? (link.providers.length === 1 ? link.providers[0]!.type : null)
      if (chosen === null) return respond(200, choicePage(link, action))
      const provider = link.providers.find((p) => p.type === chosen)?.provider
      if (provider === undefined) return respond(404, choicePage(link, action))
      const csrf = yield* freshCsrf(request)
      return respondForm(link, 200, formPage({ link, type: chosen, provider, action, csrf, values: {}, errors: {} }), {
        "set-cookie": csrfCookie(csrf)
      })
    })

  const submit = (request: Request, rawToken: string, action: string) =>
    Effect.gen(function*() {
      const origin = request.headers.get("origin")
      if (origin !== null && origin !== "null" && origin !== new URL(links.publicUrl()).origin &&
        origin !== new URL(request.url).origin) {
        return respond(403, page("Refused", html`<h1>Refused</h1><p>This form must be sent from its own page.</p>`))
      }
      const body = yield* Effect.result(readLimited(request, MAX_FORM_BYTES))
      if (Result.isFailure(body)) {
        return body.failure._tag === "PayloadTooLarge"
          ? respond(413, page("Too large", html`<h1>The form is too large.</h1>`))
          : respond(400, page("Not received", html`<h1>The form did not arrive whole.</h1><p>Please send it again.</p>`))
      }
      const form = new URLSearchParams(new TextDecoder().decode(body.success))
      const cookie = cookieOf(request, CSRF_COOKIE)
      const sent = form.get("csrf")
      if (cookie === undefined || sent === null || !constantTimeEqual(cookie, sent)) {
        return respond(403, page("Refused", html`<h1>Refused</h1><p>The form expired. Go back, reload the page and try again.</p>`))
      }
      const type = form.get("channel_type") ?? ""
      const values: Record<string, string> = {}
      for (const [key, value] of form) if (key !== "csrf" && key !== "channel_type") values[key] = value
      return yield* service.complete(rawToken, type, values).pipe(
        Effect.map(({ channel, token }) =>
          token.partner_redirect_url === null
            ? respond(200, page("Connected", html`<h1>Connected</h1>
<p>${channel.name} is now connected to ${token.partner_name}. You can close this page.</p>`))
            : new Response(null, { status: 303, headers: { ...pageHeaders(), location: token.partner_redirect_url } })
        ),
        Effect.catchTag("ProviderRejected", (rejected) =>
          Effect.gen(function*() {
            const link = yield* service.open(rawToken)
            const provider = link.providers.find((p) => p.type === type)!.provider
            return respondForm(
              link,
              422,
              formPage({ link, type, provider, action, csrf: sent, values, errors: rejected.fields, message: rejected.message })
            )
          })),
        // Another channel holds the number: said on the form, nothing created, the link's use not counted.
        Effect.catchTag("Conflict", () =>
          Effect.gen(function*() {
            const link = yield* service.open(rawToken)
            const provider = link.providers.find((p) => p.type === type)!.provider
            const message = `This ${labelOf(type)} account is already connected to an active channel, so it was not ` +
              "connected again. It can be connected once that channel is disconnected."
            return respondForm(link, 409, formPage({ link, type, provider, action, csrf: sent, values, errors: {}, message }))
          })),
        Effect.catchTag("ChannelTypeUnavailable", () =>
          Effect.map(service.open(rawToken), (link) => respond(422, choicePage(link, action))))
      )
    })

  const handle = (request: Request): Effect.Effect<Response> => {
    const url = new URL(request.url)
    const rest = url.pathname.startsWith(`${prefix}/`) ? url.pathname.slice(prefix.length + 1) : ""
    if (rest === "" || rest.includes("/")) return Effect.succeed(unusablePage("unknown"))
    const action = `${prefix}/${rest}`
    const work = request.method === "POST"
      ? submit(request, rest, action)
      : request.method === "GET" || request.method === "HEAD"
      ? show(request, rest, action, url.searchParams.get("type"))
      : Effect.succeed(respond(405, page("Not allowed", html`<h1>Method not allowed</h1>`), { allow: "GET, POST" }))
    return work.pipe(
      Effect.catchTag("LinkUnusable", (e) => Effect.succeed(unusablePage(e.reason))),
      Effect.catchCause((cause) =>
        Effect.as(
          Effect.logError("connect page failed", cause),
          respond(500, page("Something went wrong", html`<h1>Something went wrong</h1><p>Please try again in a moment.</p>`))
        )
      )
    )
  }

  // The span and log line name the page by its template: the token in the path is a secret.
  return (request: Request): Promise<Response> =>
    Effect.runPromiseWith(context)(observeRequest(request, `${prefix}/{token}`, () => handle(request)))
})
