import type { ChannelType } from "../../src/kernel/ChannelType.ts"
import type { TestApp } from "./TestApp.ts"

/** Where the test app's connect links point (its `publicUrl`). */
export const PUBLIC_URL = "http://connect.test"

// Ten digits no other call returns (with overwhelming likelihood).
const freshDigits = (): string => BigInt(`0x${globalThis.crypto.randomUUID().replaceAll("-", "")}`).toString().slice(-10)

// Each type's inputs around `n`, the digits that make its number, account or address its own.
const INPUTS: Readonly<Record<ChannelType, (n: string) => Readonly<Record<string, string>>>> = {
  botchat: (n) => ({ bot_token: `${n}:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw` }),
  chatapp: (n) => ({ phone_number_id: `10${n}`, business_account_id: "2065550100", access_token: "EAAGsecretSystemUserToken0000000001" }),
  photosocial: (n) => ({ account_id: `178414${n}`, access_token: "IGQVsecretPhotoAccessToken00000001" }),
  socialmsg: (n) => ({ page_id: `12${n}`, page_access_token: "EAAPsecretPageAccessToken000000001" }),
  webmail: (n) => ({ email_address: `Ada.${n}@Example.com`, app_password: "abcdefghijklmnop" }),
  smtp_imap: (n) => ({
    email_address: `ada.${n}@example.com`,
    imap_host: "imap.example.com",
    imap_port: "993",
    smtp_host: "smtp.example.com",
    smtp_port: "587",
    username: "ada",
    password: "secret-imap-password-0001"
  }),
  relay_a_byok: (n) => ({ account_sid: `AC${"0123456789abcdef".repeat(2)}`, auth_token: "fedcba9876543210".repeat(2), phone_number: `+1${n}` }),
  relay_b_byok: (n) => ({ api_key: "a1b2c3d4", api_secret: "relayBsecretValue01", phone_number: `+1${n}` }),
  relay_a_managed: (n) => ({ business_name: "Acme Ltd", phone_number: `+1${n}` }),
  sms: (n) => ({ phone_number: `+1${n}`, sender_id: "ACME" })
}

/**
 * Inputs the simulated provider of `type` accepts, with a number, account or address of their own: an
 * active number belongs to one channel, so each connection a test makes needs a fresh one. The secrets
 * are the same every time; none may ever come back from the API.
 */
export const validInputs = (type: ChannelType): Readonly<Record<string, string>> => INPUTS[type](freshDigits())

/** A page as the customer's browser received it. */
export interface PageAnswer {
  readonly status: number
  readonly html: string
  readonly headers: Headers
}

/** A connect form as a browser holds it: where it posts, its CSRF cookie and hidden field, its inputs. */
export interface ConnectForm {
  readonly action: string
  readonly cookie: string
  readonly csrf: string
  readonly channelType: string
  readonly inputs: ReadonlyArray<{ readonly name: string; readonly type: string; readonly required: boolean }>
}

const decodeEntities = (text: string) => text.replace(/&#(\d+);/g, (_, code: string) => String.fromCharCode(Number(code)))

const answer = async (response: Response): Promise<PageAnswer> => ({
  status: response.status,
  html: await response.text(),
  headers: response.headers
})

/** Issues a connect link through the API and returns the created token (with `connect_url`). */
export const createLink = async (
  test: TestApp,
  apiKey: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {}
): Promise<{ readonly id: string; readonly connect_url: string } & Record<string, any>> => {
  const created = await test.call("POST", "/channel-connect-tokens", { token: apiKey, body, headers })
  if (created.status !== 201) throw new Error(`creating a link answered ${created.status}: ${JSON.stringify(created.body)}`)
  return created.body
}

/** Opens `url` (a connect_url, optionally with `?type=…`) as a browser would. */
export const openPage = async (test: TestApp, url: string, cookie?: string): Promise<PageAnswer> =>
  answer(await test.app.handler(new Request(url, { headers: cookie === undefined ? {} : { cookie: `omni_connect_csrf=${cookie}` } })))

/** Reads the connect form of `page`, opened at `pageUrl`, with the CSRF cookie the page set. */
export const readForm = (page: PageAnswer, pageUrl: string): ConnectForm => {
  const action = /<form method="post" action="([^"]*)">/.exec(page.html)?.[1]
  const csrf = /<input type="hidden" name="csrf" value="([^"]*)">/.exec(page.html)?.[1]
  const channelType = /<input type="hidden" name="channel_type" value="([^"]*)">/.exec(page.html)?.[1]
  const cookie = /(?:^|[;,]\s*)omni_connect_csrf=([^;]*)/.exec(page.headers.get("set-cookie") ?? "")?.[1]
  if (action === undefined || csrf === undefined || channelType === undefined || cookie === undefined) {
    throw new Error(`no connect form on the page (status ${page.status}):\n${page.html}`)
  }
  const inputs = [...page.html.matchAll(/<input id="f-[^"]*" name="([^"]*)" type="([^"]*)"( required)?/g)]
    .map(([, name, type, required]) => ({ name: decodeEntities(name!), type: type!, required: required !== undefined }))
  return {
    action: new URL(decodeEntities(action), pageUrl).toString(),
    cookie,
    csrf: decodeEntities(csrf),
    channelType: decodeEntities(channelType),
    inputs
  }
}

/**
 * Posts `form` with `values` as the browser would: the CSRF cookie, the hidden fields and a
 * same-origin `Origin`. `tamper` replaces (or, with null, leaves out) the cookie, the field or the Origin.
 */
export const submit = async (
  test: TestApp,
  form: ConnectForm,
  values: Readonly<Record<string, string>>,
  tamper: { readonly cookie?: string | null; readonly csrf?: string | null; readonly origin?: string | null } = {}
): Promise<PageAnswer> => {
  const body = new URLSearchParams()
  const csrf = tamper.csrf === undefined ? form.csrf : tamper.csrf
  if (csrf !== null) body.set("csrf", csrf)
  body.set("channel_type", form.channelType)
  for (const [name, value] of Object.entries(values)) body.set(name, value)
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" }
  const cookie = tamper.cookie === undefined ? form.cookie : tamper.cookie
  if (cookie !== null) headers.cookie = `omni_connect_csrf=${cookie}`
  const origin = tamper.origin === undefined ? new URL(form.action).origin : tamper.origin
  if (origin !== null) headers.origin = origin
  return answer(await test.app.handler(new Request(form.action, { method: "POST", headers, body: body.toString() })))
}

/** The form for `type` behind `connectUrl`. */
export const openForm = async (test: TestApp, connectUrl: string, type: string): Promise<ConnectForm> => {
  const url = `${connectUrl}?type=${encodeURIComponent(type)}`
  return readForm(await openPage(test, url), url)
}

/** A customer connecting a `type` channel through `connectUrl` with fresh valid inputs (or `values`). */
export const connectChannel = async (
  test: TestApp,
  connectUrl: string,
  type: ChannelType,
  values: Readonly<Record<string, string>> = validInputs(type)
): Promise<PageAnswer> => submit(test, await openForm(test, connectUrl, type), values)
