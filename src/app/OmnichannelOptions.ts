import type { Clock, Layer } from "effect"
import type { ApiHandlerOptions } from "../http/ApiHandler.ts"
import type { CampaignEngineSettings } from "../campaigns/CampaignEngine.ts"
import type { InboundSettings } from "../inbound/InboundProcessor.ts"
import type { BlobStore } from "../ports/BlobStore.ts"
import type { ChannelProvider } from "../ports/ChannelProviders.ts"
import type { ChatPlatform } from "../ports/ChatPlatform.ts"
import type { HmacSigner } from "../ports/HmacSigner.ts"
import type { Mailer } from "../ports/Mailer.ts"
import type { MultipartReader } from "../ports/MultipartReader.ts"
import type { Notifier } from "../ports/Notifier.ts"
import type { OutboundClient } from "../ports/OutboundHttp.ts"
import type { StoragePorts } from "../ports/StoragePorts.ts"
import type { Summarizer } from "../ports/Summarizer.ts"
import type { DispatchSettings } from "../webhooks/engine/DispatchSettings.ts"

/** What `make` needs: storage, and optionally providers, public URL, clock and mount points. */
export interface OmnichannelOptions<E> extends ApiHandlerOptions {
  /** The storage ports, e.g. `layer(db, "postgres")` from `omnichannel-core/kysely`. */
  readonly storage: Layer.Layer<StoragePorts, E>
  /** Channel providers by channel type; connect links offer only the types that have one. */
  readonly providers?: Readonly<Partial<Record<string, ChannelProvider>>>
  /** Base of URLs handed out (connect links); a function is read each time, e.g. after the port is bound. */
  readonly publicUrl?: string | (() => string)
  /** Path of the connect page below the public URL; default `/connect`. */
  readonly connectPath?: string
  /**
   * The guarded client for tenant-supplied URLs (webhooks), e.g. `makeGuardedHttp` from
   * `omnichannel-core/http`. Without one every outbound request fails, so deliveries retry and fail.
   */
  readonly outbound?: OutboundClient
  /** Sends account notifications (webhook suspension, …); without one they are logged. */
  readonly notifier?: Notifier["Service"]
  /**
   * Signs webhook deliveries; default WebCrypto, which every runtime has. On Node pass `nodeHmacSigner`
   * from `omnichannel-core/node`: it signs on the calling thread, several times faster.
   */
  readonly signer?: HmacSigner["Service"]
  /** Overrides of the webhook engine's batch sizes and lease length. */
  readonly dispatch?: Partial<DispatchSettings>
  /** Replaces the wall clock (the reference host's manual test clock). */
  readonly clock?: Clock.Clock
  /**
   * The chat-app operator: `makeGraphChatPlatform` or `makeSimulatedChatPlatform` from
   * `omnichannel-core/chatapp`. Without one, every operator call fails (sends answer 502).
   */
  readonly chatPlatform?: ChatPlatform["Service"]
  /**
   * The operator's webhook secrets: the app secret that signs `POST /webhooks/chatapp` and the
   * handshake's verify token. Without them, random ones are drawn, which no operator knows.
   */
  readonly chatappWebhook?: { readonly appSecret: string; readonly verifyToken: string }
  /** Where attachment bytes live, e.g. `makeFileBlobStore(dir)` from `omnichannel-core/node`; default in memory. */
  readonly blobStore?: BlobStore["Service"]
  /**
   * Signed download links of attachments: the key that signs them (default random, so links die with
   * the process), the path they are served at below the public URL (default `/files`) and how long
   * they last (default 3600 seconds).
   */
  readonly downloads?: { readonly secret?: string; readonly path?: string; readonly ttlSeconds?: number }
  /** Overrides of the inbound processor's batch size, lease and tries. */
  readonly inbound?: Partial<InboundSettings>
  /** Overrides of the campaign engine's claim size, lease, round size and recipients in flight. */
  readonly campaigns?: Partial<CampaignEngineSettings>
  /**
   * Received emails read and stored at once in this process; default 2. The others wait their turn,
   * none is refused. Each holds its headers and bodies and one of its files at a time (the email's
   * bytes are streamed from the blob store, its files written out one after the other). A whole
   * number from 1 to 1024: anything else makes `make` throw.
   */
  readonly emailParseConcurrency?: number
  /**
   * Reads multipart uploads as streams: `busboyMultipart` from `omnichannel-core/node`. Without one,
   * `POST /attachments/upload` answers 400.
   */
  readonly multipart?: MultipartReader["Service"]
  /**
   * Sends email: `makeSmtpMailer(url).mailer` or `makeFileMailer(dir)` from `omnichannel-core/mail`.
   * Without one, every send fails with 503 and the email is stored `failed`.
   */
  readonly mailer?: Mailer["Service"]
  /**
   * Summarizes inbound images and PDFs for AI file summaries: `makeEmbeddedSummarizer()` (offline) or
   * `makeOpenAiSummarizer(…)` from `omnichannel-core/summarizer`. Without one, every generation fails
   * (`summary_failed`, nothing charged).
   */
  readonly summarizer?: Summarizer["Service"]
  /**
   * Days finished webhook deliveries, their outbox events and raw inbound payloads are kept after
   * they finished, then deleted in small batches by the background job `retention`; default 30.
   * A whole number from 1 to 36500: anything else makes `make` throw. Customer data (contacts,
   * conversations, messages, attachments) is never deleted by it.
   */
  readonly retentionDays?: number
  /**
   * Where this instance's spans, logs and metrics go: a layer providing a tracer, loggers and
   * metric readers, e.g. `OtlpTracer.layer` from `effect/observability` (the reference host builds
   * one in `examples/server/Observability.ts`). Without one, spans go nowhere, at no cost, and logs
   * go to Effect's default logger.
   */
  readonly telemetry?: Layer.Layer<never>
  /**
   * One log line per HTTP request once answered (request id, method, route template, status,
   * duration in ms, tenant id), through the installed loggers; default off.
   */
  readonly logRequests?: boolean
  /**
   * Labels metrics with the tenant's id (and delivery attempts with the endpoint's id); default off,
   * since every tenant then adds series to every scrape (the reference host's `OMNI_METRICS_TENANT_LABELS=1`).
   */
  readonly metricsTenantLabels?: boolean
}

/** How `startWorkers` runs. */
export interface WorkerOptions {
  /** Workers in this process; default 1. Processes on one PostgreSQL database share the work too. */
  readonly count?: number
  /**
   * Real milliseconds a loop waits before looking again when it found nothing; default 50. Events
   * committed meanwhile end the wait at once (see `withOutboxSignal`).
   */
  readonly idleMs?: number
  /** Called with what a failed round threw; the loop goes on after an idle wait. */
  readonly onError?: (job: string, error: unknown) => void
}

/** Running background workers. */
export interface Workers {
  /** Asks every worker to stop and resolves once each has recorded what it held. */
  readonly stop: () => Promise<void>
  /**
   * When each worker's loop of each job last showed it was alive, in real epoch milliseconds, by
   * `job#worker`: a loop silent for long is stuck (a readiness check reads this).
   */
  readonly heartbeats?: () => ReadonlyMap<string, number>
}
