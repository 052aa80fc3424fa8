import { Cause, Clock, Context, Deferred, Effect, Fiber, Layer, ManagedRuntime } from "effect"
import { ApiKeyAuth } from "../auth/ApiKeyAuth.ts"
import { Operator } from "../auth/Operator.ts"
import { channelRoutes } from "../channels/ChannelRoutes.ts"
import { ChannelService } from "../channels/ChannelService.ts"
import { ConnectLinks } from "../connect-tokens/ConnectLinks.ts"
import { makeConnectPageHandler } from "../connect-tokens/ConnectPage.ts"
import { connectTokenRoutes } from "../connect-tokens/ConnectTokenRoutes.ts"
import { ConnectTokenService } from "../connect-tokens/ConnectTokenService.ts"
import { contactRoutes } from "../contacts/ContactRoutes.ts"
import { eventRoutes } from "../events/EventRoutes.ts"
import { EventService } from "../events/EventService.ts"
import { withOutboxSignal } from "../events/OutboxSignal.ts"
import { ContactErasureService } from "../contacts/ContactErasureService.ts"
import { ContactService } from "../contacts/ContactService.ts"
import { type ApiHandler, makeApiHandler } from "../http/ApiHandler.ts"
import { LogRequests } from "../http/RequestTelemetry.ts"
import type { Route } from "../http/Route.ts"
import { BackgroundWork, drainDueWork, runWorker } from "../kernel/BackgroundWork.ts"
import { ChannelProviders } from "../ports/ChannelProviders.ts"
import { HmacSigner } from "../ports/HmacSigner.ts"
import { Notifier } from "../ports/Notifier.ts"
import { OutboundHttp, outboundHttpOf } from "../ports/OutboundHttp.ts"
import { webhookDeliveryRoutes } from "../webhooks/WebhookDeliveryRoutes.ts"
import { DispatchSettings } from "../webhooks/engine/DispatchSettings.ts"
import { webCryptoSigner } from "../webhooks/Signature.ts"
import { WebhookDeliveryService } from "../webhooks/WebhookDeliveryService.ts"
import { WebhookDispatcher } from "../webhooks/WebhookDispatcher.ts"
import type { StoragePorts } from "../ports/StoragePorts.ts"
import { tenantRoutes } from "../tenants/TenantRoutes.ts"
import { TenantService } from "../tenants/TenantService.ts"
import { webhookEndpointRoutes } from "../webhooks/WebhookEndpointRoutes.ts"
import { WebhookEndpointService } from "../webhooks/WebhookEndpointService.ts"
import { AttachmentService } from "../attachments/AttachmentService.ts"
import { DownloadLinks, makeDownloadLinks } from "../attachments/DownloadLinks.ts"
import { makeFileDownloadHandler } from "../attachments/FileDownload.ts"
import { makeMemoryBlobStore } from "../attachments/MemoryBlobStore.ts"
import { conversationRoutes } from "../conversations/ConversationRoutes.ts"
import { ConversationService } from "../conversations/ConversationService.ts"
import { ChatappWebhookSettings } from "../inbound/ChatappWebhookSettings.ts"
import { DEFAULT_INBOUND_SETTINGS, type InboundSettings, makeInboundJob } from "../inbound/InboundProcessor.ts"
import type { DirectRoute } from "../kernel/DirectRoute.ts"
import { CHATAPP_WEBHOOK_PATH, makeChatappDirectRoute, makeInboundHandler } from "../inbound/InboundRoutes.ts"
import { InboundService } from "../inbound/InboundService.ts"
import { ChatappHandlers } from "../kernel/ChatappEvents.ts"
import { randomToken } from "../kernel/Secret.ts"
import { messageRoutes } from "../messages/MessageRoutes.ts"
import { attachmentRoutes } from "../attachments/AttachmentRoutes.ts"
import { MultipartReader } from "../ports/MultipartReader.ts"
import { MessageService } from "../messages/MessageService.ts"
import { BlobStore } from "../ports/BlobStore.ts"
import { ChatPlatform } from "../ports/ChatPlatform.ts"
import { SendingLimitService } from "../channels/SendingLimitService.ts"
import { ThroughputService } from "../channels/ThroughputService.ts"
import { TemplateLibraryService } from "../templates/TemplateLibraryService.ts"
import { templateRoutes } from "../templates/TemplateRoutes.ts"
import { TemplateService } from "../templates/TemplateService.ts"
import { emailRoutes } from "../email/EmailRoutes.ts"
import { campaignRoutes } from "../campaigns/CampaignRoutes.ts"
import { flowRoutes } from "../flows/FlowRoutes.ts"
import { FlowService } from "../flows/FlowService.ts"
import { teamChatRoutes } from "../team-chat/TeamChatRoutes.ts"
import { TeamChatService } from "../team-chat/TeamChatService.ts"
import { CampaignSettings, DEFAULT_CAMPAIGN_ENGINE } from "../campaigns/CampaignEngine.ts"
import { CampaignService } from "../campaigns/CampaignService.ts"
import { listRoutes } from "../lists/ListRoutes.ts"
import { ListService } from "../lists/ListService.ts"
import { EMAIL_WEBHOOK_PREFIX, EmailService } from "../email/EmailService.ts"
import { ReceivedEmailSettings } from "../email/EmailReceiving.ts"
import { EmailHandlers } from "../kernel/EmailEvents.ts"
import { PublicUrl } from "../kernel/PublicUrl.ts"
import { WallClock } from "../kernel/WallClock.ts"
import { Mailer } from "../ports/Mailer.ts"
import { Summarizer } from "../ports/Summarizer.ts"
import { summaryRoutes } from "../summaries/SummaryRoutes.ts"
import { SummaryService } from "../summaries/SummaryService.ts"
import { InboundRetentionService } from "../inbound/InboundRetentionService.ts"
import { checkRetentionDays, RetentionSettings } from "../retention/Retention.ts"
import { makeRetentionJob } from "../retention/RetentionJob.ts"
import { WebhookRetentionService } from "../webhooks/WebhookRetentionService.ts"
import { MetricsSettings, registerMetrics } from "../kernel/Metrics.ts"
import { countingOperatorErrors, makeGaugeRefresh, prometheusText } from "./OperationsMetrics.ts"

/**
 * What the host configures: channel providers, where connect links point, outbound HTTP, notices,
 * signing, the chat-app operator and its webhook secrets, where files live and how links to them are signed.
 */
export type HostServices =
  | ChannelProviders
  | ConnectLinks
  | OutboundHttp
  | Notifier
  | HmacSigner
  | ChatPlatform
  | ChatappWebhookSettings
  | BlobStore
  | DownloadLinks
  | MultipartReader
  | Mailer
  | Summarizer
  | PublicUrl

/** The library's own services. */
export type CoreServices =
  | ApiKeyAuth
  | TenantService
  | ContactService
  | ContactErasureService
  | ChannelService
  | ConnectTokenService
  | EventService
  | WebhookEndpointService
  | WebhookDeliveryService
  | WebhookDispatcher
  | Operator
  | BackgroundWork
  | ConversationService
  | MessageService
  | AttachmentService
  | InboundService
  | ChatappHandlers
  | TemplateLibraryService
  | TemplateService
  | SendingLimitService
  | ThroughputService
  | EmailService
  | EmailHandlers
  | ListService
  | CampaignService
  | FlowService
  | TeamChatService
  | SummaryService

/** Everything a running instance offers: the library's services and the host's. */
export type Services = CoreServices | HostServices

/**
 * The handlers of inbound chat-app traffic, in the order they run (ARCHITECTURE.md, "Inbound
 * traffic"): the pipeline de-duplicates first; opt-in keywords, then flow answers, and the
 * conversation and message store last (it records keyword messages and answers too).
 */
const chatappHandlersLayer = Layer.effect(
  ChatappHandlers,
  Effect.gen(function*() {
    const messages = yield* MessageService
    const templates = yield* TemplateService
    const limits = yield* SendingLimitService
    const lists = yield* ListService
    const campaigns = yield* CampaignService
    const flows = yield* FlowService
    return ChatappHandlers.of({
      messages: [lists.keywordHandler, flows.answerHandler, messages.storeHandler],
      statuses: [messages.statusHandler, campaigns.statusHandler, lists.statusHandler],
      fields: {
        message_template_status_update: [templates.statusHandler],
        phone_number_quality_update: [limits.qualityHandler],
        user_preferences: [lists.preferencesHandler],
        flows: [flows.flowsHandler]
      }
    })
  })
)

/** The inbound processor's settings. */
export class InboundSettingsService extends Context.Service<InboundSettingsService, InboundSettings>()(
  "omnichannel-core/app/InboundSettings"
) {}

/** The library's services over the given storage ports and host services. */
export const servicesLayer: Layer.Layer<CoreServices, never, StoragePorts | HostServices | InboundSettingsService> =
  Layer.mergeAll(
    ApiKeyAuth.layer,
    Operator.layer,
    ConnectTokenService.layer,
    WebhookEndpointService.layer,
    WebhookDeliveryService.layer,
    InboundService.layer,
    Layer.effect(
      BackgroundWork,
      Effect.gen(function*() {
        const dispatcher = yield* WebhookDispatcher
        const inbound = yield* makeInboundJob(yield* InboundSettingsService)
        const campaigns = yield* CampaignService
        const retention = yield* makeRetentionJob
        const messages = yield* MessageService
        return BackgroundWork.of({ jobs: [...dispatcher.jobs, inbound, campaigns.job, messages.job, retention] })
      })
    ).pipe(Layer.provide(Layer.mergeAll(WebhookRetentionService.layer, InboundRetentionService.layer)))
  ).pipe(
    Layer.provideMerge(Layer.effect(
      EmailHandlers,
      Effect.map(EmailService, (email) => EmailHandlers.of({ received: email.received }))
    )),
    Layer.provideMerge(EmailService.layer),
    Layer.provideMerge(chatappHandlersLayer),
    Layer.provideMerge(Layer.mergeAll(CampaignService.layer, FlowService.layer, TeamChatService.layer)),
    Layer.provideMerge(TemplateService.layer),
    Layer.provideMerge(ListService.layer),
    Layer.provideMerge(Layer.mergeAll(MessageService.layer, TemplateLibraryService.layer, SendingLimitService.layer, ThroughputService.layer)),
    // Message, email and team chat reads fill their attachments' summary fields through it.
    Layer.provideMerge(SummaryService.layer),
    // The dispatcher mails suspension notices through the tenants' service.
    Layer.provideMerge(WebhookDispatcher.layer),
    Layer.provideMerge(Layer.mergeAll(ConversationService.layer, AttachmentService.layer, ContactService.layer, ContactErasureService.layer)),
    Layer.provideMerge(Layer.mergeAll(TenantService.layer, ChannelService.layer, EventService.layer))
  )

/** Every route of the `/api/v1` surface. */
export const routes: ReadonlyArray<Route<Services | StoragePorts>> = [
  ...tenantRoutes,
  ...contactRoutes,
  ...channelRoutes,
  ...connectTokenRoutes,
  ...webhookEndpointRoutes,
  ...webhookDeliveryRoutes,
  ...eventRoutes,
  ...conversationRoutes,
  ...messageRoutes,
  ...templateRoutes,
  ...attachmentRoutes,
  ...emailRoutes,
  ...listRoutes,
  ...campaignRoutes,
  ...flowRoutes,
  ...teamChatRoutes,
  ...summaryRoutes
]

/** The package version, shown in the OpenAPI document. */
export const VERSION = "0.1.0"

import type { OmnichannelOptions, WorkerOptions, Workers } from "./OmnichannelOptions.ts"
import { logNotifier, noChatPlatform, noMailer, noMultipart, noOutbound, noSummarizer } from "./Unconfigured.ts"

export type { OmnichannelOptions, WorkerOptions, Workers }

/** A running instance of the library, for hosts that are not written with Effect. */
export interface Omnichannel {
  /** Serves both the API and the connect page: `(Request) => Promise<Response>`. */
  readonly handler: ApiHandler
  /** The `/api/v1` surface alone. */
  readonly apiHandler: ApiHandler
  /** The connect page alone (paths below `connectPath`). */
  readonly connectPageHandler: ApiHandler
  /** Inbound traffic alone: the operator's webhooks (`GET` and `POST /webhooks/chatapp`) and received email (`POST /webhooks/email/{id}`). */
  readonly inboundHandler: ApiHandler
  /** Attachment downloads alone (signed links below the files path). */
  readonly fileHandler: ApiHandler
  /**
   * Routes a server adapter may serve without a web `Request` and `Response` (`DirectRoute`):
   * `POST /webhooks/chatapp` when tracing is off and the signer verifies on the calling thread
   * (`nodeHmacSigner`). `handler` answers the same requests the same way; pass them to `serve`
   * (`omnichannel-core/node`) as `direct`.
   */
  readonly directRoutes: ReadonlyArray<DirectRoute>
  /** Runs an Effect program against the library's services and ports (operator commands, custom use cases). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, Services | StoragePorts>) => Promise<A>
  /** Runs every piece of background work that is due now, until nothing is; resolves to the units done. */
  readonly drainDueWork: () => Promise<number>
  /**
   * Starts background workers in this process: each runs every job in its own loop (webhook
   * delivery as a continuous pipeline), looking again every `idleMs` (real time, default 50) when
   * there is nothing to do, or as soon as events are committed. `stop` lets each finish and record
   * what it holds. Errors go to `onError` (default: logged) and the loops go on. With a manual clock, drive work with
   * `drainDueWork` instead, so it happens when the clock is moved.
   */
  readonly startWorkers: (options?: WorkerOptions) => Workers
  /**
   * The process's metrics in the Prometheus text format, the queue gauges (deliveries by state,
   * suspended endpoints) read from storage first: what a host serves at `GET /metrics`.
   */
  readonly metrics: () => Promise<string>
  /** Reads the queue gauges from storage again, for a metrics exporter that pushes (OTLP). */
  readonly refreshGauges: () => Promise<void>
  /** Releases everything the storage layer acquired (closes a database it opened). */
  readonly dispose: () => Promise<void>
}

/** Starts the library over the given storage: builds the services and the HTTP handler. */
export const make = async <E>(options: OmnichannelOptions<E>): Promise<Omnichannel> => {
  const retentionDays = options.retentionDays === undefined ? undefined : checkRetentionDays("retentionDays", options.retentionDays)
  const parseConcurrency = options.emailParseConcurrency ?? ReceivedEmailSettings.defaultValue().parseConcurrency
  if (!Number.isInteger(parseConcurrency) || parseConcurrency < 1 || parseConcurrency > 1024) {
    throw new Error(`emailParseConcurrency must be a whole number from 1 to 1024, got ${String(options.emailParseConcurrency)}`)
  }
  const publicUrl = options.publicUrl ?? "http://localhost"
  const publicUrlOf = typeof publicUrl === "string" ? () => publicUrl : publicUrl
  const connectPath = `/${(options.connectPath ?? "/connect").replace(/^\/+|\/+$/g, "")}`
  const filesPath = `/${(options.downloads?.path ?? "/files").replace(/^\/+|\/+$/g, "")}`
  const random = () => Effect.runSync(randomToken(40))
  const host = Layer.mergeAll(
    Layer.succeed(ChannelProviders, ChannelProviders.of({ byType: options.providers ?? {} })),
    Layer.succeed(ConnectLinks, ConnectLinks.of({ publicUrl: publicUrlOf, path: connectPath })),
    Layer.succeed(OutboundHttp, outboundHttpOf(options.outbound ?? noOutbound)),
    Layer.succeed(Notifier, options.notifier ?? logNotifier),
    Layer.succeed(HmacSigner, options.signer ?? webCryptoSigner),
    Layer.succeed(DispatchSettings, { ...DispatchSettings.defaultValue(), ...options.dispatch }),
    // Every operator call goes through this port: failures are counted here, by operation and kind.
    Layer.succeed(ChatPlatform, countingOperatorErrors(options.chatPlatform ?? noChatPlatform)),
    Layer.succeed(
      ChatappWebhookSettings,
      ChatappWebhookSettings.of(options.chatappWebhook ?? { appSecret: random(), verifyToken: random() })
    ),
    Layer.succeed(BlobStore, options.blobStore ?? makeMemoryBlobStore()),
    Layer.succeed(MultipartReader, options.multipart ?? noMultipart),
    Layer.succeed(Mailer, options.mailer ?? noMailer),
    Layer.succeed(Summarizer, options.summarizer ?? noSummarizer),
    Layer.succeed(PublicUrl, PublicUrl.of({ base: publicUrlOf })),
    Layer.succeed(DownloadLinks, makeDownloadLinks({
      secret: options.downloads?.secret ?? random(),
      publicUrl: publicUrlOf,
      path: filesPath,
      ...(options.downloads?.ttlSeconds === undefined ? {} : { ttlSeconds: options.downloads.ttlSeconds })
    })),
    Layer.succeed(InboundSettingsService, { ...DEFAULT_INBOUND_SETTINGS, ...options.inbound }),
    Layer.succeed(CampaignSettings, { ...DEFAULT_CAMPAIGN_ENGINE, ...options.campaigns }),
    Layer.succeed(ReceivedEmailSettings, { parseConcurrency }),
    Layer.succeed(RetentionSettings, { ...RetentionSettings.defaultValue(), ...(retentionDays === undefined ? {} : { days: retentionDays }) })
  )
  // Workers in this process start at once on events it commits (see `withOutboxSignal`).
  const layer = servicesLayer.pipe(Layer.provideMerge(Layer.merge(withOutboxSignal(options.storage), host)))
  // Clock is read from the running fiber's context, so placing it in the runtime reaches every service.
  const runtime = ManagedRuntime.make(Layer.mergeAll(
    layer,
    options.clock === undefined ? Layer.empty : Layer.succeed(Clock.Clock, options.clock),
    // Built beside the clock, not under it: exporters flush on real time even with a manual clock.
    options.telemetry ?? Layer.empty,
    options.logRequests === true ? Layer.succeed(LogRequests, true) : Layer.empty,
    Layer.succeed(MetricsSettings, { tenantLabels: options.metricsTenantLabels === true })
  ))
  try {
    const apiHandler = await runtime.runPromise(
      makeApiHandler(routes, { ...options, title: "omnichannel-core", version: VERSION })
    )
    const connectPageHandler = await runtime.runPromise(makeConnectPageHandler)
    const inboundHandler = await runtime.runPromise(makeInboundHandler)
    const fileHandler = await runtime.runPromise(makeFileDownloadHandler)
    const chatappDirect = await runtime.runPromise(makeChatappDirectRoute)
    await runtime.runPromise(registerMetrics)
    const refreshGauges = await runtime.runPromise(makeGaugeRefresh)
    const below = (pathname: string, path: string) => pathname === path || pathname.startsWith(`${path}/`)
    return {
      handler: (request) => {
        const { pathname } = new URL(request.url)
        if (below(pathname, connectPath)) return connectPageHandler(request)
        if (pathname === CHATAPP_WEBHOOK_PATH || pathname.startsWith(EMAIL_WEBHOOK_PREFIX)) return inboundHandler(request)
        if (below(pathname, filesPath)) return fileHandler(request)
        return apiHandler(request)
      },
      apiHandler,
      connectPageHandler,
      inboundHandler,
      fileHandler,
      directRoutes: chatappDirect === undefined ? [] : [chatappDirect],
      run: (effect) => runtime.runPromise(effect),
      drainDueWork: () => runtime.runPromise(Effect.flatMap(BackgroundWork, (work) => drainDueWork(work.jobs))),
      startWorkers: (workerOptions = {}) => {
        const stopping = Deferred.makeUnsafe<void>()
        const running = { stopping, idleMs: workerOptions.idleMs ?? 50 }
        const onError = (job: string, cause: Cause.Cause<unknown>) =>
          workerOptions.onError === undefined
            ? Effect.logError("background job failed", cause).pipe(Effect.annotateLogs({ job }))
            : Effect.sync(() => workerOptions.onError!(job, Cause.squash(cause)))
        const wall = runtime.runSync(WallClock)
        const beats = new Map<string, number>()
        const fiber = runtime.runFork(Effect.flatMap(BackgroundWork, (work) =>
          Effect.forEach(
            Array.from({ length: workerOptions.count ?? 1 }),
            (_, worker) => runWorker(work.jobs, running, onError, (job) => beats.set(`${job}#${worker}`, wall.nowMillis())),
            { concurrency: "unbounded", discard: true }
          )))
        return {
          stop: async () => {
            Deferred.doneUnsafe(stopping, Effect.void)
            await runtime.runPromise(Fiber.await(fiber))
          },
          heartbeats: () => beats
        }
      },
      metrics: () =>
        runtime.runPromise(Effect.andThen(
          // A scrape while the database is away still answers, with the gauges as last read.
          Effect.catchTag(refreshGauges, "StorageError", (error) => Effect.logWarning("metrics: queue gauges not read", error)),
          prometheusText
        )),
      refreshGauges: () => runtime.runPromise(refreshGauges),
      dispose: () => runtime.dispose()
    }
  } catch (error) {
    await runtime.dispose()
    throw error
  }
}
