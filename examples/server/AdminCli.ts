import { Effect } from "effect"
import { Auth, ChannelProviders, Channels, make, Summaries, type TenantRecord, TenantStore } from "omnichannel-core"
import { makeGuardedHttp } from "omnichannel-core/http"
import { publicUrlOf, readConfig } from "./Config.ts"
import { operatorOptions } from "./Operator.ts"
import { storageFor } from "./Storage.ts"

/** `admin <command…> [--flag value …]`: the operator CLI. Prints one JSON object. */
const USAGE = `usage: npm run --silent admin -- <command> [--flag value …]
  bootstrap [--email E] [--tenant-name N]
  api-key create --tenant ID --scopes a,b,c [--expires-in-seconds N] [--parent] [--name N] [--user ID]
  api-key revoke --id ID
  api-key list --tenant ID
  user create --email E
  billing-account create --user ID [--name N]
  tenant list
  tenant set-sms --tenant ID --enabled true|false
  tenant set-ai --tenant ID --enabled true|false
  channel create --tenant ID --type chatapp --phone-number-id P --business-account-id W --access-token T
  channel set-throughput --tenant ID --channel ID --per-second N|auto
  channel list [--tenant ID]
  email-integration create --tenant ID --address A [--display-name N]
  credits grant --tenant ID --amount N
  credits show --tenant ID`

type Flags = Readonly<Record<string, string | true>>

const parse = (argv: ReadonlyArray<string>): { readonly words: Array<string>; readonly flags: Flags } => {
  const words: Array<string> = []
  const flags: Record<string, string | true> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith("--")) {
      words.push(arg)
      continue
    }
    const [name, inline] = arg.slice(2).split("=", 2) as [string, string | undefined]
    const next = argv[i + 1]
    if (inline !== undefined) flags[name] = inline
    else if (next !== undefined && !next.startsWith("--")) flags[name] = argv[++i]!
    else flags[name] = true
  }
  return { words, flags }
}

class UsageError extends Error {}

/**
 * The flags each command takes. `channel create` is not listed: its flags past `--tenant` and
 * `--type` are the inputs of the type's provider, checked by the provider.
 */
const COMMAND_FLAGS: Readonly<Record<string, ReadonlyArray<string>>> = {
  "bootstrap": ["email", "tenant-name"],
  "api-key create": ["tenant", "scopes", "expires-in-seconds", "parent", "name", "user"],
  "api-key revoke": ["id"],
  "api-key list": ["tenant"],
  "tenant list": [],
  "channel list": ["tenant"],
  "user create": ["email"],
  "billing-account create": ["user", "name"],
  "tenant set-sms": ["tenant", "enabled"],
  "tenant set-ai": ["tenant", "enabled"],
  "channel set-throughput": ["tenant", "channel", "per-second"],
  "email-integration create": ["tenant", "address", "display-name"],
  "credits grant": ["tenant", "amount"],
  "credits show": ["tenant"]
}

/** Refuses a flag the command does not take, naming it (a mistyped `--tennant` is not "--tenant is required"). */
const checkFlags = (command: string, flags: Flags): void => {
  const known = COMMAND_FLAGS[command]
  if (known === undefined) return
  refuseUnknown(command, Object.keys(flags).filter((name) => !known.includes(name)), known)
}

const refuseUnknown = (command: string, unknown: ReadonlyArray<string>, known: ReadonlyArray<string>): void => {
  if (unknown.length === 0) return
  const named = (names: ReadonlyArray<string>) => names.map((name) => `--${name}`).join(", ")
  const takes = known.length === 0 ? "it takes no flags" : `it takes ${named(known)}`
  throw new UsageError(`unknown flag${unknown.length === 1 ? "" : "s"} ${named(unknown)} for ${command} (${takes})`)
}

const text = (flags: Flags, name: string): string | undefined => {
  const value = flags[name]
  if (value === true) throw new UsageError(`--${name} needs a value`)
  return value
}
const required = (flags: Flags, name: string): string => {
  const value = text(flags, name)
  if (value === undefined || value === "") throw new UsageError(`--${name} is required`)
  return value
}

// Listings read a page at a time, so no single query is unbounded.
const PAGE = 500

/** Every tenant, oldest first: the operator's view, which no API caller has. */
const allTenants = Effect.gen(function*() {
  const store = yield* TenantStore
  const items: Array<TenantRecord> = []
  for (let offset = 0;; offset += PAGE) {
    const page = yield* store.listAll({ limit: PAGE, offset })
    items.push(...page.items)
    if (page.items.length < PAGE || offset + PAGE >= page.total) return items
  }
})

/** A tenant as `tenant list` prints it. */
const listedTenant = (t: TenantRecord) => ({
  id: t.id,
  billing_account_id: t.billing_account_id,
  name: t.name,
  slug: t.slug,
  is_active: t.is_active,
  is_trial: t.is_trial,
  trial_ends_at: t.trial_ends_at,
  sms_enabled: t.sms_enabled,
  ai_features_enabled: t.ai_features_enabled,
  created_at: t.created_at
})

const command = (words: ReadonlyArray<string>, flags: Flags) =>
  Effect.gen(function*() {
    const operator = yield* Auth.Operator
    switch (words.join(" ")) {
      case "bootstrap":
        return yield* operator.bootstrap({ email: text(flags, "email"), tenantName: text(flags, "tenant-name") })
      case "api-key create": {
        const seconds = text(flags, "expires-in-seconds")
        const key = yield* operator.createApiKey({
          tenantId: required(flags, "tenant"),
          scopes: required(flags, "scopes").split(",").map((s) => s.trim()).filter((s) => s !== ""),
          parent: flags.parent === true,
          name: text(flags, "name"),
          expiresInSeconds: seconds === undefined ? undefined : Number(seconds),
          userId: text(flags, "user")
        })
        return key
      }
      case "api-key revoke":
        return yield* operator.revokeApiKey(required(flags, "id"))
      case "user create":
        return yield* operator.createUser(required(flags, "email"))
      case "billing-account create":
        return yield* operator.createBillingAccount(required(flags, "user"), text(flags, "name"))
      case "tenant set-sms": {
        const enabled = required(flags, "enabled")
        if (enabled !== "true" && enabled !== "false") throw new UsageError("--enabled takes true or false")
        return yield* operator.setSmsEnabled(required(flags, "tenant"), enabled === "true")
      }
      case "tenant set-ai": {
        const enabled = required(flags, "enabled")
        if (enabled !== "true" && enabled !== "false") throw new UsageError("--enabled takes true or false")
        return yield* operator.setAiFeaturesEnabled(required(flags, "tenant"), enabled === "true")
      }
      case "credits grant": {
        const amount = required(flags, "amount")
        if (!/^[1-9]\d{0,14}$/.test(amount)) throw new UsageError("--amount takes a positive whole number")
        return yield* (yield* Summaries.SummaryService).grantCredits(required(flags, "tenant"), Number(amount))
      }
      case "credits show":
        return yield* (yield* Summaries.SummaryService).credits(required(flags, "tenant"))
      case "channel create": {
        const type = required(flags, "type")
        // The flags past --tenant and --type are the provider's fields: a mistyped one is named, not
        // passed on (nor taken for a missing --tenant).
        const provider = (yield* ChannelProviders).byType[type]
        if (provider !== undefined) {
          const known = ["tenant", "type", ...provider.fields.map((field) => field.name.replaceAll("_", "-"))]
          refuseUnknown("channel create", Object.keys(flags).filter((name) => !known.includes(name)), known)
        }
        // Every other flag is an input of the type's provider, named as on the connect page.
        const inputs = Object.fromEntries(
          Object.entries(flags)
            .filter(([name]) => name !== "tenant" && name !== "type")
            .map(([name]) => [name.replaceAll("-", "_"), required(flags, name)])
        )
        return yield* operator.createChannel({ tenantId: required(flags, "tenant"), type, inputs })
      }
      case "channel set-throughput": {
        // A whole number of messages a second, or `auto`: the operator's throughput level decides again.
        const perSecond = required(flags, "per-second")
        if (perSecond !== "auto" && !/^[1-9]\d{0,5}$/.test(perSecond)) {
          throw new UsageError("--per-second takes a positive whole number, or auto")
        }
        return yield* (yield* Channels.ThroughputService).setRate(
          required(flags, "tenant"),
          required(flags, "channel"),
          perSecond === "auto" ? null : Number(perSecond)
        )
      }
      case "tenant list":
        return { items: (yield* allTenants).map(listedTenant) }
      case "channel list": {
        // One tenant's channels, or every tenant's (oldest tenant first) without --tenant.
        const tenantId = text(flags, "tenant")
        if (tenantId !== undefined) return yield* operator.listChannels(tenantId)
        const items: Array<unknown> = []
        for (const tenant of yield* allTenants) items.push(...(yield* operator.listChannels(tenant.id)).items)
        return { items }
      }
      case "api-key list":
        return yield* operator.listApiKeys(required(flags, "tenant"))
      case "email-integration create":
        return yield* operator.createEmailIntegration({
          tenantId: required(flags, "tenant"),
          address: required(flags, "address"),
          displayName: text(flags, "display-name")
        })
      default:
        throw new UsageError(words.length === 0 ? "no command given" : `unknown command: ${words.join(" ")}`)
    }
  })

const describeFailure = (error: unknown): string => {
  if (typeof error === "object" && error !== null && "_tag" in error) {
    const e = error as { _tag: string; message?: string; issues?: ReadonlyArray<{ loc: ReadonlyArray<unknown>; msg: string }> }
    if (e.issues !== undefined) return e.issues.map((i) => `${i.loc.join(".")}: ${i.msg}`).join("; ")
    return e.message ?? e._tag
  }
  return error instanceof Error ? error.message : String(error)
}

/** What one run of the CLI printed, and its exit code. */
export interface AdminRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const execute = async (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<AdminRun> => {
  const { words, flags } = parse(argv)
  // Asked for, the usage is the answer: stdout, exit 0.
  if (flags.help === true || words[0] === "help") return { code: 0, stdout: `${USAGE}\n`, stderr: "" }
  const name = words.join(" ")
  // A usage mistake is told before any database is opened.
  if (name !== "channel create" && COMMAND_FLAGS[name] === undefined) {
    throw new UsageError(words.length === 0 ? "no command given" : `unknown command: ${name}`)
  }
  checkFlags(name, flags)
  const config = readConfig(env)
  // Only connecting a channel talks to the operator (its credentials are checked, through the guarded
  // client); the other commands set none of that up.
  const outbound = name === "channel create" ? makeGuardedHttp({ allow: config.outboundAllow }) : undefined
  // A command lasts a moment: a checkpoint thread would only be started to be waited for at exit.
  const app = await make({
    storage: storageFor(config.databaseUrl, { checkpoints: "inline" }),
    // URLs a command prints (an email integration's inbound URL) are the ones the server hands out:
    // OMNI_PUBLIC_URL, else where PORT and HOST have it listen (Config.ts decides for both).
    publicUrl: publicUrlOf(config),
    ...(outbound === undefined ? {} : operatorOptions(config, outbound))
  })
  try {
    const result = await app.run(Effect.suspend(() => command(words, flags)))
    return { code: 0, stdout: `${JSON.stringify(result)}\n`, stderr: "" }
  } finally {
    await app.dispose()
    await outbound?.close()
  }
}

/**
 * Runs one CLI command with `argv` (the words and flags after `admin`) in the environment `env`,
 * as `npm run admin` does, and returns what it would print and its exit code (0; 1 when the
 * command failed; 2 for a usage error) instead of printing and exiting.
 */
export const runAdmin = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<AdminRun> =>
  execute(argv, env).catch((error: unknown) => {
    const usage = error instanceof UsageError || /UsageError/.test(String(error))
    const reason = describeFailure(error instanceof Error && "cause" in error ? error.cause ?? error : error)
    return { code: usage ? 2 : 1, stdout: "", stderr: `admin: ${reason}\n${usage ? `${USAGE}\n` : ""}` }
  })
