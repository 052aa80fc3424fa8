// The import-graph rule of ARCHITECTURE.md ("Dependency rule"): arrows point from the edge inward,
// kernel ← ports ← areas ← app, and adapters plug into ports from outside. Checked by
// `npm run deps:check` and by test/architecture/layers.test.ts.

// Areas are every folder of src/ except these layers.
const LAYERS = "kernel|ports|http|app"
const AREA = `^src/(?!(?:${LAYERS})/)([^/]+)/`
// What an area offers the others: its services, named `…Service.ts`, and these services named
// otherwise: the HTTP edge authenticates with ApiKeyAuth, webhook workers wait on OutboxSignal.
const PUBLIC_SERVICE = ["^src/[^/]+/[^/]+Service[.]ts$", "^src/auth/ApiKeyAuth[.]ts$", "^src/events/OutboxSignal[.]ts$"]
const OUTSIDE_SRC = "adapters|examples|test|bench|scripts"

// Each store belongs to the area that owns its tables; another area calls that area's service.
// Left out: the outbox and the transactor (every area appends events in its own transaction) and
// AccountStore (users and billing accounts, written by both auth and tenants).
const STORE_OWNERS = {
  TenantStore: "tenants",
  ApiKeyStore: "auth",
  ContactStore: "contacts",
  ChannelStore: "channels",
  ConnectTokenStore: "connect-tokens",
  WebhookEndpointStore: "webhooks",
  WebhookDeliveryStore: "webhooks",
  InboundStore: "inbound",
  ConversationStore: "conversations",
  MessageStore: "messages",
  AttachmentStore: "attachments",
  TemplateStore: "templates",
  LibraryCacheStore: "templates",
  SendingLimitStore: "channels",
  SendRateStore: "channels",
  EmailStore: "email",
  ListStore: "lists",
  CampaignStore: "campaigns",
  FlowStore: "flows",
  SummaryStore: "summaries",
  TeamChatStore: "team-chat"
}

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular",
      comment: "A cycle has no inside and outside: one of its arrows points the wrong way.",
      severity: "error",
      from: {},
      to: { circular: true }
    },
    {
      name: "not-to-unresolvable",
      comment: "An import the check cannot resolve is an arrow it cannot judge.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true }
    },
    {
      name: "kernel-imports-only-kernel",
      comment: "The kernel (ids, errors, time, the event envelope) stands on nothing else of ours.",
      severity: "error",
      from: { path: "^src/kernel/" },
      to: { path: "^src/", pathNot: "^src/kernel/" }
    },
    {
      name: "ports-import-only-kernel-and-ports",
      comment: "Ports describe what the core needs from outside in the kernel's terms, not an area's.",
      severity: "error",
      from: { path: "^src/ports/" },
      to: { path: "^src/", pathNot: "^src/(kernel|ports)/" }
    },
    {
      name: "area-imports-another-areas-service-only",
      comment: "An area uses the kernel, ports, the HTTP helpers, its own files and other areas' services.",
      severity: "error",
      from: { path: AREA },
      to: { path: "^src/", pathNot: ["^src/(kernel|ports|http)/", "^src/$1/", ...PUBLIC_SERVICE] }
    },
    {
      name: "route-goes-through-its-service",
      comment: "Routes decode, call their area's service and encode; they never reach a port.",
      severity: "error",
      from: { path: "^src/[^/]+/[^/]+Routes[.]ts$" },
      to: { path: "^src/ports/" }
    },
    ...Object.entries(STORE_OWNERS).map(([store, owner]) => ({
      name: "store-of-another-area",
      comment: `${store} belongs to src/${owner}/; other areas call its service.`,
      severity: "error",
      from: { path: AREA, pathNot: `^src/${owner}/` },
      // A record type in a signature is no reach into the tables.
      to: { path: `^src/ports/${store}[.]ts$`, dependencyTypesNot: ["type-only"] }
    })),
    {
      name: "http-imports-kernel-ports-and-services",
      comment: "The HTTP edge authenticates and renders through services, never an area's insides.",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: "^src/", pathNot: ["^src/(kernel|ports|http)/", ...PUBLIC_SERVICE] }
    },
    {
      name: "src-imports-no-adapters-examples-or-tests",
      comment: "The library is embedded with the host's adapters; only examples and tests pick them.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: `^(${OUTSIDE_SRC})/` }
    },
    {
      name: "src-imports-no-node-builtins",
      comment: "src/ runs where a browser, Bun or Deno does; Node's modules stay behind a port, in adapters.",
      severity: "error",
      from: { path: "^src/" },
      to: { dependencyTypes: ["core"] }
    },
    {
      name: "adapter-imports-kernel-ports-and-its-own-folder",
      comment: "An adapter implements ports; it knows no area, no app and no other adapter.",
      severity: "error",
      from: { path: "^adapters/([^/]+)/" },
      to: { path: `^(src|${OUTSIDE_SRC})/`, pathNot: ["^src/(kernel|ports)/", "^adapters/$1/"] }
    },
    {
      name: "store-imports-no-other-store",
      comment: "A store adapter shares helpers through modules of their own, not through another store.",
      severity: "error",
      from: { path: "^adapters/[^/]+/stores/([^/]+)[.]ts$" },
      to: { path: "^adapters/[^/]+/stores/[^/]*Store[^/]*[.]ts$", pathNot: "/$1[.]ts$" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // Type-only imports are arrows too: a port naming an area's type depends on that area.
    tsPreCompilationDeps: true,
    // examples/ import the package by name ("omnichannel-core/kysely"), mapped by tsconfig's paths.
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "types", "default"]
    }
  }
}
