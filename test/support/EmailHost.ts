import MailComposer from "nodemailer/lib/mail-composer"
import { expect } from "vitest"
import { admin, type HostProcess, http, startHost } from "./Host.ts"
import type { HostBackend } from "./HostBackends.ts"
import { type SmtpSink, startSmtpSink } from "./SmtpSink.ts"

/** A tenant made by `admin bootstrap`, and its parent key holding every scope. */
export interface Tenant {
  readonly id: string
  readonly key: string
}

/** What `admin email-integration create` prints. */
export interface Integration {
  readonly email_integration_id: string
  readonly tenant_id: string
  readonly address: string
  readonly inbound_url: string
  readonly inbound_secret: string
}

/** An address with an optional display name, as a raw email names it. */
export type Mailbox = string | { readonly name: string; readonly address: string }

/** A file of a raw email; with `cid` it is an inline part the HTML shows as `cid:<cid>`. */
export interface RawFile {
  readonly filename: string
  readonly contentType: string
  readonly content: Uint8Array
  readonly cid?: string
}

/** What a raw email is made of (everything but `from` optional). */
export interface RawEmailOptions {
  readonly from: Mailbox
  readonly to?: Mailbox | ReadonlyArray<Mailbox>
  readonly replyTo?: Mailbox
  readonly subject?: string
  /** Without angle brackets. */
  readonly messageId?: string
  readonly inReplyTo?: string
  readonly references?: ReadonlyArray<string>
  readonly text?: string
  readonly html?: string
  readonly files?: ReadonlyArray<RawFile>
  readonly date?: Date
}

/**
 * A real RFC 5322 email built by nodemailer's MailComposer: RFC 2047 encoded words for non-ASCII
 * subjects and names, RFC 2231 filenames, `multipart/related` for `cid:` images,
 * `multipart/mixed` for files, In-Reply-To and References as given.
 */
export const rawEmail = async (options: RawEmailOptions): Promise<Buffer> => {
  const composer = new MailComposer({
    from: options.from,
    to: options.to === undefined ? undefined : ([] as Array<Mailbox>).concat(options.to as Mailbox | Array<Mailbox>),
    replyTo: options.replyTo,
    subject: options.subject,
    messageId: options.messageId,
    inReplyTo: options.inReplyTo,
    references: options.references === undefined ? undefined : [...options.references],
    text: options.text,
    html: options.html,
    date: options.date ?? new Date("2026-03-02T09:30:00Z"),
    attachments: (options.files ?? []).map((file) => ({
      filename: file.filename,
      contentType: file.contentType,
      content: Buffer.from(file.content),
      ...(file.cid === undefined ? { contentDisposition: "attachment" as const } : { cid: file.cid, contentDisposition: "inline" as const })
    })),
    disableFileAccess: true,
    disableUrlAccess: true,
    newline: "win"
  })
  return composer.compile().build()
}

/** A status and the parsed JSON (or the text) of an answer. */
export interface Answer {
  readonly status: number
  readonly body: any
}

/** The reference host with an SMTP sink, two tenants and a mailbox of each. */
export interface EmailHost {
  readonly env: Readonly<Record<string, string>>
  readonly host: HostProcess
  /** Where the host's outbound mail goes (`OMNI_SMTP_URL`); recipients `…@rejected.example` are refused (550). */
  readonly sink: SmtpSink
  readonly tenant: Tenant
  /** A second tenant, for what must not leak across tenants. */
  readonly other: Tenant
  /** The first tenant's mailbox. */
  readonly integration: Integration
  /** The second tenant's mailbox. */
  readonly otherIntegration: Integration
  /** Creates another mailbox of `as` (the first tenant unless given) through the CLI. */
  readonly createIntegration: (address: string, as?: Tenant, displayName?: string) => Promise<Integration>
  /** Calls `/api/v1{path}` as `as` (the first tenant unless given). */
  readonly api: (method: string, path: string, body?: unknown, as?: Tenant) => Promise<Answer>
  /**
   * POSTs `raw` to `/webhooks/email/{integration}` (the first tenant's mailbox unless given) with
   * that mailbox's secret (`secret: null`: no Authorization header) and `contentType`
   * (`message/rfc822` unless given; `null`: none).
   */
  readonly postEmail: (
    raw: Uint8Array | string,
    options?: {
      readonly secret?: string | null
      readonly integration?: Integration | string
      readonly contentType?: string | null
    }
  ) => Promise<Answer>
  /** Runs the host's background work to the end (`POST /_test/drain`); fails unless it answers 200. */
  readonly drain: () => Promise<void>
  /**
   * The stored email whose `Message-ID` is `messageId` (without angle brackets), looked up through
   * the API in the conversations of `integration` (the first tenant's mailbox unless given); undefined
   * when none holds it.
   */
  readonly emailByHeader: (messageId: string, integration?: Integration) => Promise<any>
  /**
   * Posts the raw email of `options` to `integration` (the first tenant's mailbox unless given),
   * expects 200, drains, and resolves with the email as stored (found by its Message-ID).
   */
  readonly receive: (options: RawEmailOptions & { readonly messageId: string }, integration?: Integration) => Promise<any>
  /** Uploads `bytes` as multipart field `file` to `/api/v1{path}` as `as` (the first tenant unless given). */
  readonly upload: (
    bytes: Uint8Array,
    filename: string,
    type: string,
    path?: string,
    as?: Tenant
  ) => Promise<Answer>
  /** Fetches a URL the host handed out (a signed download link) without credentials. */
  readonly download: (url: string) => Promise<{ readonly status: number; readonly bytes: Uint8Array; readonly headers: Headers }>
  /** Stops the host and the sink and drops the database. */
  readonly close: () => Promise<void>
}

const answer = async (response: Response): Promise<Answer> => {
  const text = await response.text()
  let body: unknown = text
  try {
    body = text === "" ? undefined : JSON.parse(text)
  } catch {
    // Not JSON: the text as it is.
  }
  return { status: response.status, body }
}

/**
 * Starts an SMTP sink, a fresh database of `backend`, the host on it with `OMNI_SMTP_URL` at the
 * sink and a manual test clock, bootstraps two tenants and creates a mailbox for each with the
 * CLI. If any step fails, what was started is stopped before the error is thrown.
 */
export const startEmailHost = async (backend: HostBackend): Promise<EmailHost> => {
  let sink: SmtpSink | undefined
  let host: HostProcess | undefined
  let tearDown: (() => Promise<void>) | undefined
  const close = async () => {
    if (host !== undefined && host.child.exitCode === null) await host.stop()
    await sink?.close()
    await tearDown?.()
  }
  try {
    sink = await startSmtpSink({ rejectRecipients: (address) => address.endsWith("@rejected.example") })
    const database = await backend.setUp()
    tearDown = database.tearDown
    const env: Record<string, string> = { ...database.env, OMNI_TEST_CLOCK: "manual", OMNI_SMTP_URL: sink.url }
    host = await startHost(env)
    const started = host
    const [boot, second] = await Promise.all([
      admin(env, "bootstrap", "--email", "owner@example.com"),
      admin(env, "bootstrap", "--email", "other@example.com")
    ])
    const tenant: Tenant = { id: boot.tenant_id, key: boot.api_key }
    const other: Tenant = { id: second.tenant_id, key: second.api_key }
    const createIntegration = (address: string, as: Tenant = tenant, displayName?: string): Promise<Integration> =>
      admin(
        env,
        "email-integration", "create", "--tenant", as.id, "--address", address,
        ...(displayName === undefined ? [] : ["--display-name", displayName])
      )
    const [integration, otherIntegration] = await Promise.all([
      createIntegration("support@desk.example", tenant, "Support – Kundendienst"),
      createIntegration("help@other.example", other)
    ])

    const tenantOf = (of: Integration): Tenant => (of.tenant_id === other.id ? other : tenant)
    const api = (method: string, path: string, body?: unknown, as: Tenant = tenant) =>
      http(started.url, method, `/api/v1${path}`, { token: as.key, body })
    const postEmail: EmailHost["postEmail"] = async (raw, options = {}) => {
      const target = options.integration ?? integration
      const id = typeof target === "string" ? target : target.email_integration_id
      const secret = options.secret === undefined
        ? (typeof target === "string" ? integration.inbound_secret : target.inbound_secret)
        : options.secret
      const headers: Record<string, string> = {}
      const contentType = options.contentType === undefined ? "message/rfc822" : options.contentType
      if (contentType !== null) headers["content-type"] = contentType
      if (secret !== null) headers.authorization = `Bearer ${secret}`
      const body = typeof raw === "string" ? raw : new Uint8Array(raw)
      return answer(await fetch(`${started.url}/webhooks/email/${id}`, { method: "POST", headers, body }))
    }
    const drain = async () => {
      const drained = await http(started.url, "POST", "/_test/drain")
      expect(drained.status, started.output().slice(-3000)).toBe(200)
    }
    const emailByHeader = async (messageId: string, of: Integration = integration) => {
      const as = tenantOf(of)
      const listed = await api("GET", `/conversations?channel_id=${of.email_integration_id}&page_size=100`, undefined, as)
      expect(listed.status, JSON.stringify(listed.body)).toBe(200)
      for (const conversation of listed.body.items) {
        const thread = await api("GET", `/email-integrations/conversations/${conversation.id}/email-thread`, undefined, as)
        expect(thread.status, JSON.stringify(thread.body)).toBe(200)
        const found = thread.body.items.find((email: any) => email.message_id_header === messageId)
        if (found !== undefined) return found
      }
      return undefined
    }

    return {
      env,
      host: started,
      sink,
      tenant,
      other,
      integration,
      otherIntegration,
      createIntegration,
      api,
      postEmail,
      drain,
      emailByHeader,
      receive: async (options, to = integration) => {
        const posted = await postEmail(await rawEmail(options), { integration: to })
        expect(posted.status, JSON.stringify(posted.body)).toBe(200)
        await drain()
        const stored = await emailByHeader(options.messageId, to)
        expect(stored, `${options.messageId} was not stored:\n${started.output().slice(-3000)}`).toBeDefined()
        return stored
      },
      upload: async (bytes, filename, type, path = "/attachments/upload", as = tenant) => {
        const form = new FormData()
        form.set("file", new Blob([new Uint8Array(bytes)], { type }), filename)
        return answer(
          await fetch(`${started.url}/api/v1${path}`, {
            method: "POST",
            headers: { authorization: `Bearer ${as.key}` },
            body: form
          })
        )
      },
      download: async (url) => {
        const response = await fetch(url)
        return { status: response.status, bytes: new Uint8Array(await response.arrayBuffer()), headers: response.headers }
      },
      close
    }
  } catch (error) {
    await close()
    throw error
  }
}
